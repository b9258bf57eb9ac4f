package fs

import (
	"os"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// TestFlushFiles: "files <model> <file>..." on .ucm/flush makes the files
// named durable on the disk tier (written back, no longer dirty) before it
// answers, and counts those not stored: by block id in a ucmb model, by
// path in a files model.
func TestFlushFiles(t *testing.T) {
	m := newMount(t, Options{})
	k1, d1 := testBlock(testModel, 1, 4096)
	k2, d2 := testBlock(testModel, 2, 4096)
	missing, _ := testBlock(testModel, 3, 4096)
	if err := os.MkdirAll(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	for k, d := range map[format.Key][]byte{k1: d1, k2: d2} {
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
	}
	c := openCtl(t, m, "flush")
	if a := c.ask("files " + testModel + " " + k1.ID.String() + " " + k2.ID.String() + " " + missing.ID.String()); a != "ok flushed=2 missing=1" {
		t.Fatalf("answer %q", a)
	}
	for _, k := range []format.Key{k1, k2} {
		if isDirty(m.st, k) {
			t.Errorf("%s is still dirty after its flush", k)
		}
		if _, err := onDisk(m.st, k); err != nil {
			t.Errorf("%s is not on the disk tier: %v", k, err)
		}
	}
	// A files model: by path.
	if err := os.Mkdir(m.path("vllm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(m.path("vllm"), "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(m.path("vllm", "ab", "cd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.path("vllm", "ab", "cd", "blk.bin"), []byte("kv bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := c.ask("files vllm ab/cd/blk.bin ab/cd/none.bin"); a != "ok flushed=1 missing=1" {
		t.Fatalf("answer %q", a)
	}
	if a := c.ask("files vllm"); !strings.HasPrefix(a, "err EINVAL") {
		t.Errorf("files with no file: %q, want EINVAL", a)
	}
}
