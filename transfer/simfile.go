package transfer

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/gpu"
	"golang.org/x/sys/unix"
)

// openSimFile opens the engine's shared-memory file for a sim region with
// the credentials of the session's opener (line.Creds, captured when
// .ucm/gpu was opened, whichever process writes the request), before any
// side effect:
//
//   - the path is resolved in the opener's view of the filesystem, as it
//     was at open: an absolute path under its root (confined there, so its
//     symlinks cannot leave it), a relative one from its working
//     directory, both held by the Creds since the open;
//   - it is resolved and opened on a locked OS thread whose fsuid, fsgid
//     and supplementary groups are the opener's (the thread is thrown
//     away afterwards), so a caller learns nothing it could not learn
//     itself (ENOENT or EACCES exactly as for its own open) and gets no
//     access the daemon has and it has not;
//   - it is first opened O_PATH (which opens nothing: no device is touched,
//     no FIFO blocks), and must be a regular file the opener owns (unless
//     the opener is root: the daemon writes into it) that holds the region;
//     only then is it reopened read-write, still as the opener.
//
// A request without Creds (a test driving the protocol) opens as the
// daemon, with the same checks; so does a daemon that is not root, which
// cannot take another's credentials.
func openSimFile(ctx context.Context, path string, spec gpu.RegionSpec) (*os.File, error) {
	c, ok := line.CredsOf(ctx)
	if !ok || os.Geteuid() != 0 {
		return openSimChecked(path, nil, spec)
	}
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, with the opener's credentials, ends
		// with this goroutine.
		runtime.LockOSThread()
		if err := becomeCaller(c); err != nil {
			done <- result{err: fmt.Errorf("register sim %s: taking the opener's credentials: %w", path, err)}
			return
		}
		f, err := openSimChecked(path, c, spec)
		done <- result{f, err}
	}()
	r := <-done
	return r.f, r.err
}

// becomeCaller gives the calling thread (locked, and thrown away after)
// the opener's filesystem credentials: supplementary groups, fsgid,
// fsuid. Changing the fsuid from 0 drops the thread's filesystem
// capabilities (DAC override and the like).
func becomeCaller(c *line.Creds) error {
	groups := c.Groups()
	var p unsafe.Pointer
	if len(groups) > 0 {
		p = unsafe.Pointer(&groups[0])
	}
	// The raw system call changes this thread only (syscall.Setgroups
	// would change every thread of the daemon).
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(p), 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if err := unix.Setfsgid(int(c.Gid)); err != nil {
		return err
	}
	if err := unix.Setfsuid(int(c.Uid)); err != nil {
		return err
	}
	if prev, _ := unix.SetfsuidRetUid(-1); prev != int(c.Uid) {
		return fmt.Errorf("fsuid is %d, not %d", prev, c.Uid)
	}
	return nil
}

// openSimChecked resolves path (in the view of c, the opener, when not
// nil), checks it with an O_PATH descriptor and reopens it read-write;
// see openSimFile.
func openSimChecked(path string, c *line.Creds, spec gpu.RegionSpec) (*os.File, error) {
	fail := func(code error, format string, args ...any) (*os.File, error) {
		return nil, line.Err(code, "register sim %s: "+format, append([]any{path}, args...)...)
	}
	if path == "" {
		return fail(line.ErrInvalid, "empty path")
	}
	dir, how := unix.AT_FDCWD, unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC}
	if c != nil {
		dir = c.Cwd()
		if strings.HasPrefix(path, "/") {
			dir = c.Root()
			how.Resolve = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
		}
		if dir < 0 {
			return nil, fmt.Errorf("register sim %s: the session holds no view of its opener's filesystem: %w", path, line.ErrNotCaller)
		}
	}
	pfd, err := unix.Openat2(dir, path, &how)
	if err != nil {
		return nil, fmt.Errorf("register sim %s: %w", path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("register sim %s: %w", path, err)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR // its reopen fails: EISDIR, as for any open
	switch {
	case isDir:
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fail(line.ErrInvalid, "not a regular file")
	case c != nil && c.Uid != 0 && c.Uid != st.Uid:
		return fail(line.ErrAccess, "owned by uid %d, not by the session's opener (uid %d)", st.Uid, c.Uid)
	case spec.Offset > st.Size || spec.Size > st.Size-spec.Offset:
		return fail(line.ErrInvalid, "the file holds %d bytes, the region is %d bytes at offset %d", st.Size, spec.Size, spec.Offset)
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("register sim %s: %w", path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	return os.NewFile(uintptr(fd), path), nil
}

// checkSimFD applies register sim's rules to a descriptor passed for
// register vmm on the simulated device (which maps it as the shared
// memory): a regular file, open read-write, owned by the caller (uid)
// unless the caller is root. The device maps the descriptor itself and
// never reopens it, so a descriptor that only names a file (O_PATH) or
// reads it gives the daemon no more than the sender had.
func checkSimFD(f *os.File, uid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return line.Err(line.ErrInvalid, "register vmm: the descriptor: %v", err)
	}
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	switch {
	case err != nil || flags&unix.O_PATH != 0 || flags&unix.O_ACCMODE != unix.O_RDWR:
		return line.Err(line.ErrAccess, "register vmm: the descriptor is not open read-write")
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return line.Err(line.ErrInvalid, "register vmm: the descriptor is not a regular file (the simulated device maps shared-memory files)")
	case uid != 0 && uint32(uid) != st.Uid:
		return line.Err(line.ErrAccess, "register vmm: the file is owned by uid %d, not by the caller (uid %d)", st.Uid, uid)
	}
	return nil
}
