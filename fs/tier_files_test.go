package fs

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/pkg/xattr"
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
	pythonAsOther(t, script, m.path("eng"))
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

// TestPinsBounded: another user pins every file it writes. Its pins keep
// at most half the memory tier (--max-pinned's default), past it a pin
// is ENOSPC, and root's blocks still go into memory without a wait for
// room (before, the user's pins filled memory and each of root's writes
// waited 10 s for room, then went to the nvme tier).
func TestPinsBounded(t *testing.T) {
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 8 << 20}, tiers.DirConfig{Kind: "nvme"})
	m := sharedMountOf(t, st, store.Options{})
	openModel(t, m, "eng", "files")
	script := `cd "$1"; ok=0; no=0
for i in $(seq 1 16); do
  head -c 524288 /dev/zero > p$i.bin || exit 1
  if setfattr -n user.ucm.pinned -v 1 p$i.bin 2>/dev/null; then ok=$((ok+1)); else no=$((no+1)); fi
done
echo "$ok $no"`
	cmd := exec.Command("sh", "-c", script, "sh", m.path("eng"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("another user's pins: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "8 8" {
		t.Fatalf("pins made and refused: %q, want 8 of 512 KiB in 4 MiB, 8 refused", got)
	}
	for i := range 8 {
		p := m.path("eng", fmt.Sprintf("root%d.bin", i))
		if err := os.WriteFile(p, make([]byte, 512<<10), 0o644); err != nil {
			t.Fatal(err)
		}
		if v, err := xattr.Get(p, "user.ucm.tiers"); err != nil || !strings.HasPrefix(string(v), "mem") {
			t.Fatalf("root's block %d is on %q (%v), want memory", i, v, err)
		}
	}
	if s := st.Stats(); s.RoomWaits != 0 || s.DirectWrites != 0 {
		t.Fatalf("root's writes: %d room waits, %d direct writes; want none", s.RoomWaits, s.DirectWrites)
	}
}
