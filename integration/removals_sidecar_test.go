package integration

import (
	"os"

	"github.com/ucmfs/ucmfs/format"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoveTreeWithSidecars: rm -r, find -delete and Python's
// shutil.rmtree of a model whose blocks have sidecars (derived by a read
// of each, then listed beside their blocks) remove it without an error:
// unlinking a block removes its sidecar, so a shard lists the sidecar
// first, and each tool, which unlinks in the listing's order, finds
// every name it listed.
func TestRemoveTreeWithSidecars(t *testing.T) {
	requireTool(t, "rm")
	requireTool(t, "find")
	requireTool(t, "python3")
	d := mountUCM(t, mountOpts{})
	for i, tool := range [][]string{
		{"rm", "-r"},
		{"find", "", "-delete"},
		{"python3", "-c", "import shutil, sys; shutil.rmtree(sys.argv[1])"},
	} {
		model := "rm" + string(rune('a'+i))
		ids := testIDs(model, 64)
		if err := os.Mkdir(d.path(model), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if err := writeVerdict(blockPath(d.Mnt, model, id), derivableBlock(id)); err != nil {
				t.Fatal(err)
			}
			if _, err := os.ReadFile(strings.TrimSuffix(blockPath(d.Mnt, model, id), ".bin") + ".repr"); err != nil {
				t.Fatalf("deriving %s's sidecar: %v", id, err)
			}
		}
		listed, err := filepath.Glob(filepath.Join(d.Mnt, model, "*", "*.repr"))
		if err != nil || len(listed) != len(ids) {
			t.Fatalf("%d sidecars listed, want %d (%v)", len(listed), len(ids), err)
		}
		args := append([]string(nil), tool[1:]...)
		if tool[0] == "find" {
			args[0] = d.path(model)
		} else {
			args = append(args, d.path(model))
		}
		if out, err := exec.Command(tool[0], args...).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("%s of a model with sidecars: %v\n%s", strings.Join(tool, " "), err, out)
		}
		if _, err := os.Stat(d.path(model)); !os.IsNotExist(err) {
			t.Errorf("%s: the model is still there (%v)", tool[0], err)
		}
	}
}

// derivableBlock is a block of id that states its shape (2 layers of K
// and V, 4 tokens, 2 heads of 8 float16), so its sidecar can be derived.
func derivableBlock(id string) []byte {
	bid, _ := format.ParseID(id)
	payload := make([]byte, 2*2*4*2*8*2)
	h := format.BlockHeader{ID: bid, NumLayers: 2, BlockSize: 4, Dtype: format.Float16, NumKVHeads: 2, HeadDim: 8,
		TensorsPerLayer: 2, PayloadCRC: format.CRC32C(payload), Flags: format.FlagCRC, PayloadLen: uint64(len(payload))}
	return format.NewBlock(h, payload)
}
