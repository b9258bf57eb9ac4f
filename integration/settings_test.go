package integration

import (
	"bytes"
	"errors"
	"os"
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
