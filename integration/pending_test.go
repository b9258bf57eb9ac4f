package integration

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestPendingBudget: files being written count against a budget. Six
// open files of 16 MiB on a mount with a 16 MiB memory tier and
// --max-pending 24MiB: writes past it fail with ENOSPC (the kernel's,
// through passthrough, or the daemon's) and creates too; past one user's
// share a create is EDQUOT; a block published before reads back intact,
// and once the files are closed writing works again.
func TestPendingBudget(t *testing.T) {
	d := mountUCM(t, mountOpts{Bare: true, Args: []string{"--memory", "16MiB", "--memory-dir", memDir,
		"--log-level", "warn", "--tier", "nvme:" + testDir(t) + "/tier",
		"--max-pending", "24MiB", "--max-pending-per-user", "20MiB"}})
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("pending", 8)
	for _, id := range ids {
		os.Mkdir(d.path("m", id[:2]), 0o755)
	}
	kept := goodBlock(ids[0])
	if err := writeVerdict(blockPath(d.Mnt, "m", ids[0]), kept); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	var open []*os.File
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	var writeErr, createErr error
	for _, id := range ids[1:7] {
		f, err := os.OpenFile(blockPath(d.Mnt, "m", id), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
		if err != nil {
			createErr = err
			break
		}
		open = append(open, f)
		for i := 0; i < 16 && writeErr == nil; i++ {
			_, writeErr = f.Write(chunk)
		}
		if writeErr != nil {
			break
		}
	}
	if writeErr == nil && createErr == nil {
		t.Fatal("96 MiB being written against a 24 MiB budget: no refusal")
	}
	for _, err := range []error{writeErr, createErr} {
		if err != nil && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) {
			t.Errorf("refusal %v, want ENOSPC or EDQUOT", err)
		}
	}
	// One user past its share: a new file is EDQUOT (or ENOSPC, once the
	// whole budget is gone too).
	if _, err := os.OpenFile(blockPath(d.Mnt, "m", ids[7]), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444); !errors.Is(err, syscall.EDQUOT) && !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("create past the share: %v, want EDQUOT", err)
	}
	if got, err := os.ReadFile(blockPath(d.Mnt, "m", ids[0])); err != nil || string(got) != string(kept) {
		t.Errorf("the published block: %v", err)
	}
	for _, f := range open {
		f.Close() // junk: refused at close, and gone
	}
	open = nil
	if err := writeVerdict(blockPath(d.Mnt, "m", ids[7]), goodBlock(ids[7])); err != nil {
		t.Errorf("a write once the files are closed: %v", err)
	}
}
