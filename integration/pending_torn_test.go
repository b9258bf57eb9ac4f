package integration

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// TestFullWriteNotPublished: in a files model (raw bytes, no header to
// tell a short file), cp of a file larger than what the memory tier's
// filesystem has left fails with ENOSPC (a write the kernel makes itself
// through passthrough) and publishes nothing: no torn file under the
// name. A file that fits copies whole afterwards.
func TestFullWriteNotPublished(t *testing.T) {
	d := mountUCM(t, mountOpts{Bare: true, Args: []string{"--memory", "16MiB", "--memory-dir", memDir,
		"--log-level", "warn", "--tier", "nvme:" + testDir(t) + "/tier", "--max-pending", "24MiB"}})
	filesModel(t, d, "m")
	src := testDir(t) + "/src"
	// The private tmpfs is the capacity plus the budget plus 48 MiB of
	// slack (tiers.tmpfsSize): 88 MiB here.
	big := bytes.Repeat([]byte("0123456789abcdef"), 128<<16) // 128 MiB
	if err := os.WriteFile(src, big, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("cp", src, d.path("m", "big")).CombinedOutput()
	if err == nil {
		t.Fatalf("cp of 128 MiB with 16 MiB of memory and a 24 MiB budget for files being written succeeded: %s", out)
	}
	if fi, err := os.Stat(d.path("m", "big")); err == nil {
		got, _ := os.ReadFile(d.path("m", "big"))
		t.Fatalf("a failed cp published %d bytes (whole: %v), want no file", fi.Size(), bytes.Equal(got, big))
	}
	small := big[:4<<20]
	if err := os.WriteFile(src, small, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", src, d.path("m", "small")).CombinedOutput(); err != nil {
		t.Fatalf("cp of 4 MiB after the refusal: %v %s", err, out)
	}
	if got, err := os.ReadFile(d.path("m", "small")); err != nil || !bytes.Equal(got, small) {
		t.Errorf("the 4 MiB copy reads %d bytes, %v", len(got), err)
	}
}
