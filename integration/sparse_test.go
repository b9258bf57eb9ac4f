package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

const sparseModel = "org--Sparse-7B"

// TestSparsePythonClient: the reference Python client, in its own
// process, writes float32 blocks, reads their derived sidecars and checks
// each against the mean of the block's keys it computes itself, then
// ranks the blocks through .ucm/topk (by mean on one layer, by max on
// all) and checks the answers against its own brute-force ranking. The
// derived sidecars are stored: after a restart they are on the directory
// tier, valid, next to their blocks.
func TestSparsePythonClient(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	sh(t, "mkdir", d.path(sparseModel))
	out := mustPy(t, "sparse-check", d.Mnt, sparseModel, "--blocks", "16", "--layers", "3", "--heads", "4",
		"--head-dim", "16", "--block-size", "8", "--k", "6", "--seed", "7")
	for _, want := range []string{
		"derived 16 sidecars: each the mean of its block's keys",
		"topk mean, layer 0: 6 hits as Python ranks them, 2 missing",
		"topk max, all layers: 6 hits as Python ranks them, 2 missing",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("sparse-check said\n%s\nwant a line %q", out, want)
		}
	}
	st := statsOf(t, d)
	if st["repr_derived"] != 16.0 || st["topks"] != 4.0 || st["topk_reused"] != 2.0 {
		t.Errorf("stats: repr_derived %v topks %v topk_reused %v", st["repr_derived"], st["topks"], st["topk_reused"])
	}
	mustPy(t, "flush", d.Mnt)
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	n := 0
	walk(t, d.Tier, func(path string) {
		if !strings.HasSuffix(path, ".repr") {
			return
		}
		n++
		if err := format.VerifyFile(path); err != nil {
			t.Errorf("stored sidecar %s: %v", path, err)
		}
		if _, err := os.Stat(strings.TrimSuffix(path, ".repr") + ".bin"); err != nil {
			t.Errorf("sidecar without its block: %v", err)
		}
	})
	if n != 16 {
		t.Errorf("%d sidecars on the tier, want 16", n)
	}
}

// TestSparseSettings: --repr-kind is the default of every model, a
// model's user.ucm.repr_kind overrides it, and a bad topk request gets an
// err line from the real daemon, which keeps serving.
func TestSparseSettings(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--repr-kind", "merged:2"}})
	sh(t, "mkdir", d.path(sparseModel))
	if v, err := getxattr(d.path(sparseModel), "user.ucm.repr_kind"); err != nil || v != "merged:2" {
		t.Fatalf("repr_kind %q %v, want merged:2", v, err)
	}
	ids := testIDs("sparse-settings", 2)
	mustPy(t, "put", d.Mnt, sparseModel, ids[0], "--dtype", "bfloat16", "--block-size", "16", "--heads", "2", "--head-dim", "64")
	if out := mustPy(t, "repr", d.Mnt, sparseModel, ids[0]); !strings.HasPrefix(out, "kind=merged dtype=float32 layers=4 heads=2 rows=8 dim=64 param=2 ") {
		t.Errorf("repr: %q", out)
	}
	if err := syscall.Setxattr(d.path(sparseModel), "user.ucm.repr_kind", []byte("signhash:64"), 0); err != nil {
		t.Fatal(err)
	}
	mustPy(t, "put", d.Mnt, sparseModel, ids[1], "--dtype", "float16")
	if out := mustPy(t, "repr", d.Mnt, sparseModel, ids[1]); !strings.HasPrefix(out, "kind=signhash dtype=uint8 layers=4 heads=2 rows=1 dim=8 param=64 ") {
		t.Errorf("repr: %q", out)
	}
	if err := syscall.Setxattr(d.path(sparseModel), "user.ucm.repr_kind", []byte("median"), 0); err != syscall.EINVAL {
		t.Errorf("repr_kind median: %v, want EINVAL", err)
	}
	if out := mustPy(t, "ctl", d.Mnt, "topk", "topk "+sparseModel+" kind=mean layer=0 k=0 heads=2 dim=64 q=AAAAAA== "+ids[0]); !strings.HasPrefix(out, "err EINVAL ") {
		t.Errorf("k=0: %q", out)
	}
	if out := mustPy(t, "ctl", d.Mnt, "topk", "topk no-such-model kind=mean layer=0 k=1 heads=1 dim=1 q=AAAAAA== "+ids[0]); !strings.HasPrefix(out, "err ENOENT ") {
		t.Errorf("unknown model: %q", out)
	}
	out := mustPy(t, "topk", d.Mnt, sparseModel, ids[0], ids[1], testIDs("absent", 1)[0], "--heads", "2", "--dim", "64",
		"--kind", "signhash:64", "--layer", "all", "--k", "2", "--query", strings.TrimSuffix(strings.Repeat("0.5,", 4*2*64), ","))
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], "missing ") {
		t.Errorf("topk after the errors: %q", out)
	}
}

// walk calls fn with the path of every regular file under dir.
func walk(t *testing.T, dir string, fn func(path string)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			fn(path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
