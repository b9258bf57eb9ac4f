package integration

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestFailedRenameKeepsSource: a rename refused by the model's quota
// (EDQUOT, an engine's tmp + rename into a full model) changes nothing:
// the staging file is still there with its bytes, and a rename once room
// is made publishes it. In a files model and for a block's staging name
// (<id>.bin.tmp) alike.
func TestFailedRenameKeepsSource(t *testing.T) {
	t.Run("files", testFailedRenameFiles)
	t.Run("blocks", testFailedRenameBlocks)
}

func testFailedRenameBlocks(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	ids := testIDs("rename-quota", 2)
	m := d.path("bq")
	if err := os.Mkdir(m, 0o755); err != nil {
		t.Fatal(err)
	}
	block := goodBlock(ids[0])
	if err := syscall.Setxattr(m, "user.ucm.quota", []byte(strconv.Itoa(len(block)*3/2)), 0); err != nil {
		t.Fatal(err)
	}
	first := blockPath(d.Mnt, "bq", ids[0])
	os.MkdirAll(filepath.Dir(first), 0o755)
	if err := os.WriteFile(first, block, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := blockPath(d.Mnt, "bq", ids[1])
	os.MkdirAll(filepath.Dir(dst), 0o755)
	tmp := dst + ".tmp"
	second := goodBlock(ids[1])
	if err := os.WriteFile(tmp, second, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("rename past the quota: %v, want EDQUOT", err)
	}
	if b, err := os.ReadFile(tmp); err != nil || !bytes.Equal(b, second) {
		t.Fatalf("the staging block after the failed rename: %d bytes, %v; want its %d bytes", len(b), err, len(second))
	}
	if err := os.Remove(first); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatalf("the rename once room is made: %v", err)
	}
}

func testFailedRenameFiles(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	m := filesModel(t, d, "fq")
	if err := syscall.Setxattr(m, "user.ucm.quota", []byte(strconv.Itoa(1<<20)), 0); err != nil {
		t.Fatal(err)
	}
	first := bytes.Repeat([]byte{1}, 700<<10)
	second := bytes.Repeat([]byte{2}, 700<<10)
	if err := os.WriteFile(filepath.Join(m, "f4.bin"), first, 0o644); err != nil {
		t.Fatal(err)
	}
	tmp, dst := filepath.Join(m, "f5.bin.tmp"), filepath.Join(m, "f5.bin")
	if err := os.WriteFile(tmp, second, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("rename past the quota: %v, want EDQUOT", err)
	}
	if b, err := os.ReadFile(tmp); err != nil || !bytes.Equal(b, second) {
		t.Fatalf("the staging file after the failed rename: %d bytes, %v; want its %d bytes", len(b), err, len(second))
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the target after the failed rename: %v, want ENOENT", err)
	}
	if err := os.Remove(filepath.Join(m, "f4.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatalf("the rename once room is made: %v", err)
	}
	if b, err := os.ReadFile(dst); err != nil || !bytes.Equal(b, second) {
		t.Fatalf("the renamed file: %d bytes, %v", len(b), err)
	}
}
