package tier

import (
	"errors"

	"golang.org/x/sys/unix"
)

// IgnoringEINTR calls fn again for as long as it fails with EINTR, as the
// os package does around its own system calls. The tiers call the kernel
// directly (golang.org/x/sys/unix) in many places, and a tier directory
// may be a FUSE filesystem (3FS's client; the fault injector of the
// tests): the kernel interrupts a FUSE request when the calling thread
// gets a signal, and the Go runtime signals its threads all the time
// (SIGURG, to preempt goroutines), so a stat, an open or a rename there
// fails now and then with EINTR although nothing is wrong. Taken for an
// answer, such an EINTR failed a write-back, and dropped a listed file
// from a shared tier's index (a miss until the next listing).
//
// Only for calls that are safe to repeat: a repeated unlink or rename
// may find its own first attempt done (ENOENT); the callers take ENOENT
// as "gone", which it is. A create with O_EXCL may find the file its
// interrupted attempt made (EEXIST): the staging names are random, and
// the callers pick another. os.Chtimes, unlike most of the os package,
// does not make its call again: it goes through here too.
func IgnoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
