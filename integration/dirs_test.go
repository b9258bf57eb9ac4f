package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDirectoriesAsToolsSeeThem: what ls, find and df show of the mount's
// directories. Every directory lists "." and ".." first (ls -a); a
// directory's link count is 2 and its subdirectories (the root: .ucm
// and each model; a ucmb model: its 256 shards; a files model and its
// directories: theirs); df -i counts the files the tiers hold (IUsed)
// of the most they may hold (two tiers of --max-files 1000); a model's
// mtime is when its mkdir made it, and a restart keeps it.
func TestDirectoriesAsToolsSeeThem(t *testing.T) {
	requireTool(t, "ls")
	requireTool(t, "find")
	args := []string{"--max-files", "1000"}
	d := mountUCM(t, mountOpts{Args: args})
	before := time.Now()
	for _, m := range []string{"m1", "m2"} {
		if err := os.Mkdir(d.path(m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	after := time.Now()
	filesModel(t, d, "fm")
	for _, dir := range []string{"fm/a/x", "fm/b", "fm/c"} {
		if err := os.MkdirAll(d.path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(d.path("fm/a/x/f"), []byte("kv"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := testIDs("dirs", 1)[0]
	writeBlocks(t, d, "m1", []string{id})
	shard := "m1/" + id[:2]

	for _, dir := range []string{"", ".ucm", "m1", shard, "fm", "fm/a", "fm/a/x"} {
		out, err := exec.Command("ls", "-a1f", d.path(dir)).Output()
		if names := strings.Split(string(out), "\n"); err != nil || len(names) < 2 || names[0] != "." || names[1] != ".." {
			t.Errorf("ls -a of %q: %v, want . and .. first:\n%s", dir, err, out)
		}
	}
	links := map[string]uint64{"": 2 + 1 + 3, "m1": 2 + 256, shard: 2, "fm": 2 + 3, "fm/a": 2 + 1, "fm/a/x": 2, "fm/b": 2}
	for dir, want := range links {
		var st unix.Stat_t
		if err := unix.Stat(d.path(dir), &st); err != nil || st.Nlink != want {
			t.Errorf("%q: %d links (%v), want %d", dir, st.Nlink, err, want)
		}
	}
	if out, err := exec.Command("find", d.path("fm")).Output(); err != nil || strings.Count(string(out), "\n") != 6 {
		t.Errorf("find of the files model: %v, want it and its 4 directories and 1 file:\n%s", err, out)
	}
	var sf unix.Statfs_t
	if err := unix.Statfs(d.Mnt, &sf); err != nil || sf.Files != 2*1000 || sf.Files-sf.Ffree != 2 {
		t.Errorf("statfs: %d files, %d free (%v); want 2000 (two tiers of 1000), 2 used", sf.Files, sf.Ffree, err)
	}

	made := modelTimes(t, d, "m1", "m2")
	for m, mt := range made {
		if mt.Before(before) || mt.After(after) {
			t.Errorf("%s's mtime %v is not its mkdir's (between %v and %v)", m, mt, before, after)
		}
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	d = mountUCM(t, mountOpts{Tier: d.Tier, Args: args})
	for m, mt := range modelTimes(t, d, "m1", "m2") {
		if !mt.Equal(made[m]) {
			t.Errorf("%s's mtime after a restart: %v, want %v", m, mt, made[m])
		}
	}
}

// modelTimes are the mtimes of models of d's mount.
func modelTimes(t *testing.T, d *daemon, models ...string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for _, m := range models {
		fi, err := os.Stat(d.path(m))
		if err != nil {
			t.Fatal(err)
		}
		out[m] = fi.ModTime()
	}
	return out
}
