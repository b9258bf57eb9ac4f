package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

const opaqueModel = "org--Hybrid-7B.g1"

// opaqueBlock is an opaque block (a Mamba state) for id: 2 layers, 1000
// payload bytes (no multiple of anything), no K/V layout.
func opaqueBlock(id string) []byte {
	bid, _ := format.ParseID(id)
	payload := make([]byte, 1000)
	for i := range payload {
		payload[i] = byte(i*31 + 5)
	}
	return format.NewBlock(format.BlockHeader{ID: bid, NumLayers: 2, BlockSize: 16, Dtype: format.Float32,
		Flags: format.FlagOpaque}, payload)
}

// flushAll asks the daemon to make every block durable, and waits for its
// answer.
func flushAll(t *testing.T, d *daemon) {
	t.Helper()
	if err := flushErr(d); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// flushErr writes "all" to d's .ucm/flush and returns the error, or the
// answer when it is not "ok flushed".
func flushErr(d *daemon) error {
	f, err := os.OpenFile(d.path(".ucm", "flush"), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteString("all\n"); err != nil {
		return err
	}
	buf := make([]byte, 256)
	n, err := f.Read(buf)
	if err != nil {
		return err
	}
	if ans := string(buf[:n]); ans != "ok flushed\n" {
		return fmt.Errorf("flush answered %q", ans)
	}
	return nil
}

// TestOpaqueBlock: through a real mount, an opaque block publishes and
// reads back; no sidecar is derived from it nor accepted beside it; a
// flush writes it back to the nvme tier, where `ucmfs fsck` finds it
// clean, and a new daemon on that tier serves it again.
func TestOpaqueBlock(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	sh(t, "mkdir", d.path(opaqueModel))
	id := testIDs("opaque", 1)[0]
	data := opaqueBlock(id)
	p := blockPath(d.Mnt, opaqueModel, id)
	if err := writeVerdict(p, data); err != nil {
		t.Fatalf("publishing an opaque block: %v", err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reading it back: %v", err)
	}
	sidecar := strings.TrimSuffix(p, ".bin") + ".repr"
	if _, err := os.Stat(sidecar); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("stat of an opaque block's sidecar: %v, want ENOENT (none derived)", err)
	}
	bid, _ := format.ParseID(id)
	repr := format.NewRepr(format.ReprHeader{ID: bid, Kind: format.ReprMean, Dtype: format.Float32,
		NumLayers: 2, NumKVHeads: 1, Rows: 1, Dim: 4}, make([]byte, 2*4*4))
	if err := writeVerdict(sidecar, repr); err == nil {
		t.Errorf("a sidecar beside an opaque block was accepted")
	}

	flushAll(t, d)
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, d.out.String())
	}
	onTier := blockPath(d.Tier, opaqueModel, id)
	if got, err := os.ReadFile(onTier); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the nvme tier's copy: %v", err)
	}
	out, err := exec.Command(ucmfsBin, "fsck", d.Tier).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1 files checked (1 blocks, 0 sidecars): 1 ok, 0 bad") {
		t.Fatalf("fsck %s: %v\n%s", d.Tier, err, out)
	}
	out, _ = exec.Command(ucmfsBin, "inspect", onTier).CombinedOutput()
	if !strings.Contains(string(out), "opaque") || !strings.Contains(string(out), "result         OK") {
		t.Errorf("inspect:\n%s", out)
	}

	d2 := mountUCM(t, mountOpts{Tier: d.Tier})
	if got, err := os.ReadFile(blockPath(d2.Mnt, opaqueModel, id)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reading it from the tier after a restart: %v", err)
	}
}
