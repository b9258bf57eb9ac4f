package integration

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHeaderCorruptionIsAMiss flips header bytes of tier files the way a
// bad disk would (block_size 16 -> 16,711,696; the payload CRC field) and
// restarts: each block is a miss (ENOENT on open and on its xattrs), moved
// to the tier's .quarantine, counted, while an intact block reads back;
// `ucmfs inspect` and `ucmfs fsck` agree with the daemon.
func TestHeaderCorruptionIsAMiss(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("hdr-corrupt", 3)
	for _, id := range ids {
		os.Mkdir(d.path("m", id[:2]), 0o755)
		if err := writeVerdict(blockPath(d.Mnt, "m", id), goodBlock(id)); err != nil {
			t.Fatal(err)
		}
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	flip := func(id string, off int64, v uint32) {
		f, err := os.OpenFile(blockPath(d.Tier, "m", id), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], v)
		if _, err := f.WriteAt(b[:], off); err != nil {
			t.Fatal(err)
		}
	}
	flip(ids[0], 28, 16_711_696) // block_size
	flip(ids[1], 48, 0xdeadbeef) // payload_crc32c (the xattr keeps the right one)

	for _, id := range ids[:2] {
		out, err := exec.Command(ucmfsBin, "inspect", blockPath(d.Tier, "m", id)).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "xattr_hcrc") {
			t.Errorf("inspect of a damaged header: %v\n%s", err, out)
		}
	}
	if out, err := exec.Command(ucmfsBin, "fsck", d.Tier).CombinedOutput(); err == nil {
		t.Errorf("fsck passes a damaged header:\n%s", out)
	}

	d2 := mountUCM(t, mountOpts{Mnt: d.Mnt, Tier: d.Tier})
	for _, id := range ids[:2] {
		p := blockPath(d2.Mnt, "m", id)
		if _, err := getxattr(p, "user.ucm.block_size"); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("xattr of a damaged block: %v, want ENOENT", err)
		}
		if _, err := os.ReadFile(p); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("read of a damaged block: %v, want ENOENT", err)
		}
		if _, err := os.Stat(filepath.Join(d.Tier, ".quarantine", "m", id[:2], id+".bin")); err != nil {
			t.Errorf("not quarantined: %v", err)
		}
	}
	if got, err := os.ReadFile(blockPath(d2.Mnt, "m", ids[2])); err != nil || string(got) != string(goodBlock(ids[2])) {
		t.Errorf("intact block: %v", err)
	}
	if q := statsOf(t, d2)["quarantined"]; q != float64(2) {
		t.Errorf("quarantined %v, want 2", q)
	}
	if code := d2.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	if out, err := exec.Command(ucmfsBin, "fsck", d.Tier).CombinedOutput(); err != nil {
		t.Errorf("fsck after the quarantine: %v\n%s", err, out)
	}
}
