package dir_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// TestDirSnapshot: a clean close writes the index snapshot; the next
// start takes the unchanged shards from it (same files, sizes, publish
// times) and lists the shards changed meanwhile (a file added by hand, a
// file removed by hand); a damaged snapshot is ignored.
func TestDirSnapshot(t *testing.T) {
	root := t.TempDir()
	var logs bytes.Buffer
	open := func() *dir.Tier {
		logs.Reset()
		log := slog.New(slog.NewTextHandler(&logs, nil))
		d, err := dir.New(dir.Config{Kind: "nvme", Dir: root, Capacity: 1 << 30, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := open()
	want := map[format.Key]tier.Info{}
	for i := 0; i < 40; i++ {
		key := tiertest.Key("m", i)
		tiertest.Put(t, d, key, tiertest.Payload(uint64(i), 100+i), tier.CommitOptions{})
		info, _ := d.Stat(key)
		want[key] = info
	}
	time.Sleep(150 * time.Millisecond) // past the snapshot's slack
	d.Close()
	if _, err := os.Stat(filepath.Join(root, dir.SnapshotFileName)); err != nil {
		t.Fatalf("no snapshot after a clean close: %v", err)
	}
	check := func(d *dir.Tier, want map[format.Key]tier.Info) {
		t.Helper()
		if u := d.Usage(); u.Files != int64(len(want)) {
			t.Fatalf("%d files, want %d", u.Files, len(want))
		}
		for key, w := range want {
			info, err := d.Stat(key)
			if err != nil || info.Size != w.Size || !info.MTime.Equal(w.MTime) {
				t.Fatalf("%s: %+v %v, want %+v", key, info, err, w)
			}
		}
	}
	d = open()
	check(d, want)
	d.Close()
	if !strings.Contains(logs.String(), "shards_from_snapshot=") || strings.Contains(logs.String(), "shards_from_snapshot=0\n") {
		t.Fatalf("the start did not use the snapshot:\n%s", logs.String())
	}

	// Behind the tier's back: a file added to one shard, one removed from
	// another; both shards are listed again.
	added := tiertest.Key("m", 1000)
	p := tiertest.WriteFile(t, root, added.Path(), tiertest.BlockFile(added.ID))
	fi, _ := os.Stat(p)
	want[added] = tier.Info{Key: added, Size: fi.Size(), MTime: fi.ModTime().Truncate(time.Second)}
	var gone format.Key
	for k := range want {
		if k != added && k.ID.Shard() != added.ID.Shard() {
			gone = k
			break
		}
	}
	if err := os.Remove(filepath.Join(root, gone.Path())); err != nil {
		t.Fatal(err)
	}
	delete(want, gone)
	d = open()
	defer d.Close()
	if info, err := d.Stat(added); err != nil || info.Size != want[added].Size {
		t.Fatalf("a file added by hand: %+v %v", info, err)
	}
	if _, err := d.Stat(gone); err == nil {
		t.Fatal("a file removed by hand is still indexed")
	}
	if u := d.Usage(); u.Files != int64(len(want)) {
		t.Fatalf("%d files, want %d", u.Files, len(want))
	}
	d.Close()

	// A damaged snapshot is ignored: every shard is listed.
	snap := filepath.Join(root, dir.SnapshotFileName)
	data, _ := os.ReadFile(snap)
	data[len(data)/2] ^= 0xff
	os.WriteFile(snap, data, 0o644)
	d2 := open()
	defer d2.Close()
	if u := d2.Usage(); u.Files != int64(len(want)) {
		t.Fatalf("with a damaged snapshot: %d files, want %d", u.Files, len(want))
	}
}
