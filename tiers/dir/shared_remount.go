package dir

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// A shared tier's filesystem client can die under the daemon (ceph-fuse
// or the glusterfs client killed, a FUSE client's crash): every access
// through its mount answers ENOTCONN until the mount is detached and the
// client mounted again. The directory the tier holds is the dead mount's
// and never answers again, while the path leads, once the client is
// mounted again, to the same directory through the new mount: the held
// descriptor says ENOTCONN rather than that its directory went
// (rootfs.Root.Gone cannot tell), so the tier stayed down for good. An
// ENOTCONN from the tier, when the held directory itself answers
// ENOTCONN while a directory that answers is at its path, is therefore
// taken as a lost root: the probe takes the directory at
// the path again (root.go), and the tier comes back Up through
// Unstable. (Found by killing ceph-fuse and the glusterfs client under
// a running daemon: integration TestSharedFSFaults. A Gluster brick that
// is down answers ENOTCONN for its files too, but the held directory
// answers: that is no lost root.)

// remountWhy is the log line's reason for a lost root found so.
const remountWhy = "its filesystem's client is gone (ENOTCONN) and a directory that answers is at its path again"

// checkRemount looks, after an operation of the tier answered err, when
// err is ENOTCONN, whether the held directory answers ENOTCONN too and a
// directory that answers is at the tier's path, and then takes the
// tier's root as lost. The look runs apart, at most one
// at a time, bounded by the tier's timeout: the caller may hold locks.
func (t *sharedDir) checkRemount(err error) {
	if !errors.Is(err, unix.ENOTCONN) || t.lostRoot() || !t.remountBusy.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer t.remountBusy.Store(false)
		found := make(chan bool, 1)
		go func() {
			var st unix.Stat_t
			dead := errors.Is(unix.Fstat(t.fs.FD(), &st), unix.ENOTCONN)
			found <- dead && t.fs.PathIsDir()
		}()
		select {
		case ok := <-found:
			if ok {
				t.loseRoot(remountWhy)
			}
		case <-time.After(t.timeout):
		}
	}()
}
