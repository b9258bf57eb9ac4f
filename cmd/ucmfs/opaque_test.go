package main

import (
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// opaqueFile is a valid opaque block (a Mamba state): 3 layers, 90
// payload bytes, no K/V layout.
func opaqueFile(id format.ID) []byte {
	payload := make([]byte, 90)
	for i := range payload {
		payload[i] = byte(i*7 + int(id[0]))
	}
	return format.NewBlock(format.BlockHeader{ID: id, NumLayers: 3, BlockSize: 16, Dtype: format.Float32,
		Flags: format.FlagOpaque}, payload)
}

func TestInspectOpaque(t *testing.T) {
	id := testIDs[0]
	p := writeAt(t, t.TempDir(), id.String()+".bin", opaqueFile(id))
	code, out, errs := runMain(t, "inspect", p)
	if code != 0 || errs != "" {
		t.Fatalf("inspect: %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"layout         opaque", "payload_len    90", "result         OK\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "head_dim") || strings.Contains(out, "tensors") {
		t.Errorf("an opaque block shows a K/V layout:\n%s", out)
	}
}

// TestFsckOpaque: opaque blocks check clean; a sidecar beside one is bad,
// and so is a corrupt one.
func TestFsckOpaque(t *testing.T) {
	dir := t.TempDir()
	good, withRepr, corrupt := testIDs[0], testIDs[1], testIDs[2]
	writeAt(t, dir, tierPath(good, ".bin"), opaqueFile(good))
	code, out, errs := runMain(t, "fsck", dir)
	if want := "fsck " + dir + ": 1 files checked (1 blocks, 0 sidecars): 1 ok, 0 bad, 0 errors, 0 leftovers\n"; code != 0 || out != want {
		t.Fatalf("fsck: %d\n%s%s", code, out, errs)
	}
	writeAt(t, dir, tierPath(withRepr, ".bin"), opaqueFile(withRepr))
	writeAt(t, dir, tierPath(withRepr, ".repr"), reprFile(withRepr))
	bad := opaqueFile(corrupt)
	bad[len(bad)-1] ^= 1
	writeAt(t, dir, tierPath(corrupt, ".bin"), bad)
	code, out, _ = runMain(t, "fsck", dir)
	for _, want := range []string{
		"bad " + tierPath(withRepr, ".repr") + ": UCMR opaque rule broken",
		"bad " + tierPath(corrupt, ".bin") + ": UCMB crc rule broken",
		"2 ok, 2 bad",
	} {
		if code != exitFail || !strings.Contains(out, want) {
			t.Errorf("fsck: status %d, output lacks %q:\n%s", code, out, want)
		}
	}
}
