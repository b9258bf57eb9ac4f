package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/internal/ucmproto"
	"golang.org/x/sys/unix"
)

// TestUCMPosixKill9 kills the daemon with SIGKILL, cycle after cycle,
// while UCM-protocol staging files are open and half written, and
// blocks were dumped since the last flush. After each remount every
// flushed block reads back intact, every block present is whole (no torn
// file), no staging name is left, and the store goes on; at the end the
// tier directory passes fsck.
func TestUCMPosixKill9(t *testing.T) {
	dir := testDir(t)
	mnt, tier := filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	var durable []string
	const cycles = 4
	for cycle := range cycles + 1 {
		d := mountUCM(t, mountOpts{Mnt: mnt, Tier: tier, Args: []string{"--default-layout", "ucm-posix"}})
		st := &ucmproto.Store{Root: d.path("ucm"), Width: 2, Mode: ucmproto.Psync, Shards: 4, ShardSize: 32 << 10, TensorSize: 16 << 10}
		if err := os.Mkdir(st.Root, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		if err := st.Setup(); err != nil {
			t.Fatal(err)
		}
		checkUCMStore(t, st, durable, cycle)
		if cycle == cycles {
			if code := d.stop(); code != 0 {
				t.Fatalf("SIGTERM: exit %d", code)
			}
			break
		}
		ids := testIDs(fmt.Sprintf("kill9-ucm/%d", cycle), 6)
		for _, id := range ids {
			if err := st.Dump(id, ucmData(id, st.BlockSize()), false); err != nil {
				t.Fatal(err)
			}
		}
		if got := ctl(t, d.Mnt, "flush", "model ucm"); got != "ok flushed\n" {
			t.Fatalf("flush: %q", got)
		}
		durable = append(durable, ids...)
		for _, id := range testIDs(fmt.Sprintf("kill9-ucm-dirty/%d", cycle), 6) {
			if err := st.Dump(id, ucmData(id, st.BlockSize()), false); err != nil {
				t.Fatal(err)
			}
		}
		var open []int // staging files half written, open at the kill
		for _, id := range testIDs(fmt.Sprintf("kill9-ucm-open/%d", cycle), 3) {
			fd, err := unix.Open(st.Path(id, true), unix.O_WRONLY|unix.O_CREAT, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := unix.Pwrite(fd, ucmData(id, st.ShardSize), 0); err != nil {
				t.Fatal(err)
			}
			open = append(open, fd)
		}
		d.kill()
		d.detach()
		for _, fd := range open {
			unix.Close(fd)
		}
	}
	if out, err := exec.Command(ucmfsBin, "fsck", tier).CombinedOutput(); err != nil {
		t.Errorf("ucmfs fsck of the tier after the kill -9 cycles: %v\n%s", err, out)
	}
}

// checkUCMStore checks a remounted store: the durable blocks are there
// and intact, every block present is whole, and no staging name is left.
func checkUCMStore(t *testing.T, st *ucmproto.Store, durable []string, cycle int) {
	t.Helper()
	for _, id := range durable {
		got, err := st.Load(id)
		if err != nil || !bytes.Equal(got, ucmData(id, st.BlockSize())) {
			t.Fatalf("cycle %d: flushed block %s: %v (intact: %v)", cycle, id, err, err == nil && bytes.Equal(got, ucmData(id, st.BlockSize())))
		}
	}
	files, err := st.Scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < len(durable) {
		t.Errorf("cycle %d: %d blocks, want at least the %d flushed", cycle, len(files), len(durable))
	}
	for _, f := range files {
		got, err := os.ReadFile(st.Path(f.ID, false))
		if err != nil || !bytes.Equal(got, ucmData(f.ID, st.BlockSize())) {
			t.Errorf("cycle %d: block %s present but not whole (%d bytes, %v)", cycle, f.ID, len(got), err)
		}
	}
	for _, shard := range st.ShardNames() {
		ents, err := os.ReadDir(filepath.Join(st.Root, shard))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("cycle %d: staging file %s/%s survived the restart", cycle, shard, e.Name())
			}
		}
	}
}
