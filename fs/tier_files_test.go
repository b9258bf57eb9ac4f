package fs

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// TestTierFilesBounded: another user writes many more tiny and empty
// files than the tiers' MaxFiles into a files model others may write in.
// Each file is an entry of the daemon's index whatever its size, so
// before, the bytes alone bounded them (a tier's capacity over 4 KiB);
// now no tier holds more than its MaxFiles, every write succeeds (the
// oldest files go, as from a full tier), and the newest are intact.
func TestTierFilesBounded(t *testing.T) {
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20, MaxFiles: 50},
		tiers.DirConfig{Kind: "nvme", Capacity: 1 << 30, MaxFiles: 80})
	m := sharedMountOf(t, st, store.Options{})
	openModel(t, m, "eng", "files")
	const n = 400
	script := fmt.Sprintf(`
import os, sys
d = sys.argv[1]
for i in range(%d):
    p = os.path.join(d, "f%%d.bin" %% i)
    fd = os.open(p + ".tmp", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, (b"%%d;" %% i) * (i %% 3))
    os.fsync(fd)
    os.close(fd)
    os.rename(p + ".tmp", p)
`, n)
	cmd := exec.Command("/usr/bin/python3", "-c", script, m.path("eng"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("another user's %d tiny files: %v: %s", n, err, out)
	}
	raw, err := os.ReadFile(m.path(".ucm", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Tiers []struct {
			Name   string `json:"name"`
			Blocks int64  `json:"blocks"`
		} `json:"tiers"`
	}
	if err := json.Unmarshal(raw, &stats); err != nil {
		t.Fatal(err)
	}
	bound := map[string]int64{"mem": 50, "nvme": 80}
	for _, tier := range stats.Tiers {
		if tier.Blocks > bound[tier.Name] {
			t.Fatalf("%s tier holds %d files, its bound is %d", tier.Name, tier.Blocks, bound[tier.Name])
		}
	}
	for i := n - 40; i < n; i++ {
		got, err := os.ReadFile(m.path("eng", fmt.Sprintf("f%d.bin", i)))
		if err != nil {
			t.Fatalf("newest file %d: %v", i, err)
		}
		if want := fmt.Sprint(i) + ";"; len(got) != len(want)*(i%3) || i%3 > 0 && string(got[:len(want)]) != want {
			t.Fatalf("file %d holds %q", i, got)
		}
	}
	if _, err := os.Stat(m.path("eng", "f0.bin")); !os.IsNotExist(err) {
		t.Fatalf("the oldest file: %v, want it gone", err)
	}
}
