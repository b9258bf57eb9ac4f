package dir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// A daemon killed while one of its threads waits in the kernel cannot
// finish dying. The thread sends an entry invalidation, which takes the
// directory's lock; another process holds that lock while it waits for
// this daemon's answer to a create or a rename, which never comes. The
// kernel closes a dead process's files, its tier locks among them, only
// once every thread is gone, and it ends the wait only when the FUSE
// connection is aborted (docs/operations.md). So a daemon records its
// FUSE connection beside the lock of each private tier (RecordOwner), and
// the next daemon that finds such a lock held by a zombie process (a
// thread group whose leader has exited) that the record names aborts the
// recorded connection and takes the lock once the kernel has let it go.

// OwnerFileName is the file beside LockFileName where the daemon holding
// the lock records its pid and its FUSE connection ("pid 123 fuse 45").
const OwnerFileName = ".ucmfs.owner"

// fuseConnections is where the fusectl filesystem lists FUSE connections.
const fuseConnections = "/sys/fs/fuse/connections"

// stuckWait is how long a daemon waits for a lock that an aborted
// connection's daemon holds to be let go.
const stuckWait = 10 * time.Second

// lockOwner is what OwnerFileName records.
type lockOwner struct {
	pid  int
	conn uint32 // the connection's number: its mount's minor device number
}

// writeOwner records o in dir's OwnerFileName (a temp file renamed over
// it: a reader never sees half a record).
func writeOwner(dir rootfs.FS, o lockOwner) error {
	tmp := tier.TmpPrefix + "owner-" + tier.RandomSuffix()
	if err := dir.WriteFile(tmp, fmt.Appendf(nil, "pid %d fuse %d\n", o.pid, o.conn), 0o600); err != nil {
		return err
	}
	if err := dir.Rename(tmp, OwnerFileName, 0); err != nil {
		_ = dir.Unlink(tmp)
		return err
	}
	return nil
}

// readOwner reads dir's OwnerFileName.
func readOwner(dir rootfs.FS) (lockOwner, error) {
	b, err := dir.ReadFile(OwnerFileName)
	if err != nil {
		return lockOwner{}, err
	}
	var o lockOwner
	if _, err := fmt.Sscanf(string(b), "pid %d fuse %d\n", &o.pid, &o.conn); err != nil || o.pid <= 0 {
		return lockOwner{}, fmt.Errorf("%s: not an owner record: %q", OwnerFileName, b)
	}
	return o, nil
}

// flockHolder returns the pid of the process holding a flock on the file
// rel beneath r, from /proc/locks; 0 when none does.
func flockHolder(r rootfs.FS, rel string) (int, error) {
	var st unix.Stat_t
	if err := r.Stat(rel, &st); err != nil {
		return 0, err
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 3412 00:2f:1234 0 EOF"; a waiter's
		// line has "->" after the number.
		f := strings.Fields(sc.Text())
		if len(f) >= 6 && f[1] == "FLOCK" && f[5] == want {
			return strconv.Atoi(f[4])
		}
	}
	return 0, nil
}

// zombie reports whether pid's thread group leader has exited while
// another of its threads has not (state Z in /proc/<pid>/stat).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')') // the name, in parentheses, may hold anything
	return i >= 0 && len(b) > i+2 && b[i+2] == 'Z'
}

// freeStuckHolder frees dir's lock file at lockPath when the process
// holding it is a dead daemon stuck in the kernel: the owner record names
// it, and it is a zombie. It aborts the recorded FUSE connection and
// waits for the lock to be let go; it returns the lock, or nil and why
// not (nil, nil: the holder is not such a daemon).
func freeStuckHolder(dir rootfs.FS, lockPath string, log *slog.Logger) (*os.File, error) {
	o, err := readOwner(dir)
	if err != nil {
		return nil, nil
	}
	if pid, err := flockHolder(dir, lockPath); err != nil || pid != o.pid || !zombie(pid) {
		return nil, nil
	}
	abort := filepath.Join(fuseConnections, strconv.FormatUint(uint64(o.conn), 10), "abort")
	f, err := os.OpenFile(abort, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("held by pid %d, a daemon that died stuck in the kernel; its FUSE connection %d cannot be aborted (%w): "+
			"mount -t fusectl none %s, then start again, or abort it by hand (docs/operations.md)", o.pid, o.conn, err, fuseConnections)
	}
	defer f.Close()
	// Checked again with the file open: the connection number is the
	// holder's as long as the holder lives.
	if pid, err := flockHolder(dir, lockPath); err != nil || pid != o.pid || !zombie(pid) {
		return nil, nil
	}
	if _, err := f.WriteString("1"); err != nil {
		return nil, fmt.Errorf("held by pid %d, a daemon that died stuck in the kernel; abort of its FUSE connection %d: %w", o.pid, o.conn, err)
	}
	log.Warn("tier lock held by a daemon that died stuck in the kernel: its FUSE connection aborted", "dir", dir.Name(), "pid", o.pid, "fuse_connection", o.conn)
	deadline := time.Now().Add(stuckWait)
	for {
		lock, err := tier.LockExclusive(dir, lockPath)
		if !errors.Is(err, tier.ErrLocked) || time.Now().After(deadline) {
			return lock, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
