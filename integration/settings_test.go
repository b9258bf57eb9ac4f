package integration

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/internal/ucmproto"
	"golang.org/x/sys/unix"
)

// TestModelSettingsRestart: user.ucm.layout, group and quota set on a
// model directory, and the shard directories its store made, are the
// same after the daemon restarts; bad values are EINVAL, and the layout
// of a model that holds a block cannot change (ENOTEMPTY).
func TestModelSettingsRestart(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	m := d.path("m")
	if err := os.Mkdir(m, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, value := range map[string]string{"layout": "ucm-posix", "group": "swa:4096", "quota": "1048576"} {
		if err := unix.Setxattr(m, "user.ucm."+name, []byte(value), 0); err != nil {
			t.Fatalf("set %s: %v", name, err)
		}
	}
	for name, value := range map[string]string{"layout": "posix", "group": "swa:0"} {
		if err := unix.Setxattr(m, "user.ucm."+name, []byte(value), 0); !errors.Is(err, unix.EINVAL) {
			t.Errorf("set %s=%s: %v, want EINVAL", name, value, err)
		}
	}
	st := &ucmproto.Store{Root: m, Width: 3, Shards: 2, ShardSize: 8192, TensorSize: 4096}
	if err := st.Setup(); err != nil {
		t.Fatal(err)
	}
	id := testIDs("settings", 1)[0]
	if err := st.Dump(id, ucmData(id, st.BlockSize()), false); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(m, "user.ucm.layout", []byte("ucmb"), 0); !errors.Is(err, unix.ENOTEMPTY) {
		t.Errorf("layout of a model with a block: %v, want ENOTEMPTY", err)
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}

	d2 := mountUCM(t, mountOpts{Mnt: d.Mnt, Tier: d.Tier})
	for name, want := range map[string]string{"layout": "ucm-posix", "group": "swa:4096", "quota": "1048576"} {
		if got, err := getxattr(m, "user.ucm."+name); err != nil || got != want {
			t.Errorf("after a restart: %s = %q %v, want %q", name, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(m, "fff")); err != nil || !fi.IsDir() {
		t.Errorf("shard directory fff after a restart: %v", err)
	}
	if got, err := st.Load(id); err != nil || !bytes.Equal(got, ucmData(id, st.BlockSize())) {
		t.Errorf("block after a restart: %v", err)
	}
	_ = d2
}

// TestUCMDataDirAsTier: a directory UCM's PosixStore wrote (shards of
// width 2, raw files, a leftover .tmp) given to ucmfs as its nvme tier:
// the model takes the ucm-posix layout from its files and UCM's protocol
// reads every block through the mount.
func TestUCMDataDirAsTier(t *testing.T) {
	tier := filepath.Join(testDir(t), "tier")
	plain := &ucmproto.Store{Root: filepath.Join(tier, "ucm"), Width: 2, Shards: 2, ShardSize: 8192, TensorSize: 4096}
	if err := os.MkdirAll(plain.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := plain.Setup(); err != nil {
		t.Fatal(err)
	}
	ids := testIDs("adopt", 5)
	for _, id := range ids {
		if err := plain.Dump(id, ucmData(id, plain.BlockSize()), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(plain.Path(testIDs("adopt-left", 1)[0], true), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := mountUCM(t, mountOpts{Tier: tier})
	if got, err := getxattr(d.path("ucm"), "user.ucm.layout"); err != nil || got != "ucm-posix" {
		t.Errorf("layout of an adopted UCM directory: %q %v", got, err)
	}
	st := *plain
	st.Root = d.path("ucm")
	for _, id := range ids {
		if hit, err := st.Lookup(id); err != nil || !hit {
			t.Errorf("lookup %s: %v %v", id, hit, err)
		}
		if got, err := st.Load(id); err != nil || !bytes.Equal(got, ucmData(id, st.BlockSize())) {
			t.Errorf("load %s through the mount: %v", id, err)
		}
	}
	if files, err := st.Scan(); err != nil || len(files) != len(ids) {
		t.Errorf("the mount lists %d blocks (%v), want %d", len(files), err, len(ids))
	}
}

// TestUCMImportRsync: the documented import of a UCM data directory,
// `rsync -a --no-perms DIR/ <mnt>/<model>/` on a mount with
// --default-layout ucm-posix, publishes every raw block byte for byte
// (mtimes kept) and a second run exits 0 and copies nothing.
func TestUCMImportRsync(t *testing.T) {
	requireTool(t, "rsync")
	src := &ucmproto.Store{Root: filepath.Join(testDir(t), "ucm"), Width: 3, Shards: 2, ShardSize: 8192, TensorSize: 4096}
	if err := os.MkdirAll(src.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := src.Setup(); err != nil {
		t.Fatal(err)
	}
	for _, id := range testIDs("import", 6) {
		if err := src.Dump(id, ucmData(id, src.BlockSize()), false); err != nil {
			t.Fatal(err)
		}
	}
	d := mountUCM(t, mountOpts{Args: []string{"--default-layout", "ucm-posix"}})
	for run := 1; run <= 2; run++ {
		out, err := exec.Command("rsync", "-a", "--no-perms", "--stats", src.Root+"/", d.path("imported")+"/").CombinedOutput()
		if err != nil {
			t.Fatalf("rsync run %d: %v\n%s", run, err, out)
		}
		if run == 2 && !bytes.Contains(out, []byte("Number of regular files transferred: 0")) {
			t.Errorf("the second rsync copied files:\n%s", out)
		}
	}
	sameTree(t, "imported vs UCM directory", readTree(t, d.path("imported")), readTree(t, src.Root))
	for _, f := range func() []ucmproto.FileInfo { fs, _ := src.Scan(); return fs }() {
		var a, b unix.Stat_t
		if unix.Stat(src.Path(f.ID, false), &a) != nil || unix.Stat(filepath.Join(d.path("imported"), f.ID[:3], f.ID), &b) != nil || a.Mtim.Sec != b.Mtim.Sec {
			t.Errorf("%s: mtime %d on the mount, %d in the UCM directory", f.ID, b.Mtim.Sec, a.Mtim.Sec)
		}
	}
}
