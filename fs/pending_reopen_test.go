package fs

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEmptyFileReopened: a process that creates an empty file (a lock
// file), closes it and opens it again at once gets it, read-only, and
// can flock it. An empty file publishes at its last release, which the
// kernel sends after close returns: an open that found the file still
// being written and came after the publish was EACCES; it is now ESTALE
// to the kernel, which looks the name up again and opens the published
// file. Many rounds, since the release races with the open.
func TestEmptyFileReopened(t *testing.T) {
	m := newMount(t, Options{})
	dir := m.model(t, "eng", "files")
	for i := range 300 {
		p := fmt.Sprintf("%s/lock%d", dir, i)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := os.Open(p)
		if err != nil {
			t.Fatalf("round %d: open again after the close: %v", i, err)
		}
		if err := unix.Flock(int(r.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Errorf("round %d: flock: %v", i, err)
		}
		r.Close()
	}
}
