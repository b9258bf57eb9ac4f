package line

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Creds is who the requests of a control session are checked as: the
// process that opened the session, as it was at open, the way the kernel
// keeps an open file's credentials (f_cred). Every request of the
// session, whichever process writes or reads it, is checked as these and
// resolves its paths in this view; and only a process with the opener's
// fsuid and fsgid may use the session at all (Admits). A descriptor
// handed to a setuid program, or to a process of another user, issues no
// request with that program's credentials.
//
// Capture reads them from the opener's task: a FUSE request names its
// thread by number only. The thread cannot end while the daemon handles
// its request (the kernel waits for the answer, killably only until the
// daemon has read the request), but a number is only a number: a task
// read under it that is not the opener's would lend the session another
// process's groups, root and working directory. So Capture opens
// /proc/<pid> once, checks that the task has the request's fsuid and
// fsgid (a number reused by a process of another user or group is
// refused), and reads everything else through that one descriptor.
type Creds struct {
	// Uid and Gid are the opener's fsuid and fsgid.
	Uid, Gid uint32
	// Pid is the opener's thread, as the kernel named it at open.
	Pid uint32

	groups    []uint32
	root, cwd int // the opener's root and working directory (O_PATH), or -1
}

// ErrNotCaller: the task under the caller's number is not the caller
// (EACCES: the request is refused as an access it cannot be granted).
var ErrNotCaller = fmt.Errorf("the caller's process is gone: %w", ErrAccess)

// ErrNotOpener: a process whose fsuid or fsgid is not the opener's wrote
// or read a control session (EACCES).
var ErrNotOpener = fmt.Errorf("the session belongs to the process that opened it: %w", ErrAccess)

// Capture reads the credentials of c's process (see Creds): its fsuid
// and fsgid, checked against c's, and its supplementary groups; with
// paths, it also holds its root and working directory, for requests that
// name paths (Close releases them).
func (c Caller) Capture(paths bool) (*Creds, error) {
	proc, err := unix.Open("/proc/"+strconv.FormatUint(uint64(c.Pid), 10), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w: %w", c.Pid, ErrNotCaller, err)
	}
	defer unix.Close(proc)
	cr := &Creds{Uid: c.Uid, Gid: c.Gid, Pid: c.Pid, root: -1, cwd: -1}
	if cr.groups, err = readGroups(proc, c); err != nil {
		return nil, err
	}
	if paths {
		for _, d := range []struct {
			name string
			fd   *int
		}{{"root", &cr.root}, {"cwd", &cr.cwd}} {
			if *d.fd, err = unix.Openat(proc, d.name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
				*d.fd = -1
				cr.Close()
				return nil, fmt.Errorf("the %s of pid %d: %w: %w", d.name, c.Pid, ErrNotCaller, err)
			}
		}
	}
	return cr, nil
}

// readGroups reads the status of the task proc holds: it must have c's
// fsuid and fsgid; it returns its supplementary groups.
func readGroups(proc int, c Caller) ([]uint32, error) {
	fd, err := unix.Openat(proc, "status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w: %w", c.Pid, ErrNotCaller, err)
	}
	f := os.NewFile(uintptr(fd), "status")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w: %w", c.Pid, ErrNotCaller, err)
	}
	fsuid, fsgid, groups := int64(-1), int64(-1), []uint32(nil)
	seen := false
	for _, l := range strings.Split(string(b), "\n") {
		name, rest, _ := strings.Cut(l, ":")
		fields := strings.Fields(rest)
		switch {
		case name == "Uid" && len(fields) == 4:
			fsuid, _ = strconv.ParseInt(fields[3], 10, 64)
		case name == "Gid" && len(fields) == 4:
			fsgid, _ = strconv.ParseInt(fields[3], 10, 64)
		case name == "Groups":
			seen = true
			for _, f := range fields {
				g, err := strconv.ParseUint(f, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("groups of pid %d: %q", c.Pid, f)
				}
				groups = append(groups, uint32(g))
			}
		}
	}
	if !seen || fsuid != int64(c.Uid) || fsgid != int64(c.Gid) {
		return nil, fmt.Errorf("pid %d runs as fsuid %d fsgid %d, the request came from uid %d gid %d: %w",
			c.Pid, fsuid, fsgid, c.Uid, c.Gid, ErrNotCaller)
	}
	return groups, nil
}

// Groups is the opener's supplementary groups.
func (cr *Creds) Groups() []uint32 { return cr.groups }

// InGroup reports whether the opener is in group gid, its primary one or
// a supplementary one.
func (cr *Creds) InGroup(gid uint32) bool {
	return cr.Gid == gid || slices.Contains(cr.groups, gid)
}

// Root and Cwd are the opener's root and working directory, O_PATH
// descriptors the Creds own; -1 unless Capture was asked for paths.
func (cr *Creds) Root() int { return cr.root }

// Cwd: see Root.
func (cr *Creds) Cwd() int { return cr.cwd }

// Admits checks the sender w of a write or read of the opener's session:
// it must run with the opener's fsuid and fsgid (a fork of the opener, or
// another process of the same user and group, may use the descriptor; a
// setuid or setgid program it was handed to, or a process of another
// user, may not: ErrNotOpener).
func (cr *Creds) Admits(w Caller) error {
	if w.Uid == cr.Uid && w.Gid == cr.Gid {
		return nil
	}
	return fmt.Errorf("pid %d runs as uid %d gid %d, the session was opened as uid %d gid %d (pid %d): %w",
		w.Pid, w.Uid, w.Gid, cr.Uid, cr.Gid, cr.Pid, ErrNotOpener)
}

// Close releases the root and working directory Capture held.
func (cr *Creds) Close() {
	for _, fd := range []*int{&cr.root, &cr.cwd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// Permits is the rule of store.Models.Permits, as CheckModel takes it.
type Permits func(model string, uid, gid uint32, inGroup func(uint32) bool, want uint32) bool

// CheckModel refuses (ErrAccess) a request of ctx's session (CredsOf)
// that names model when permits says its opener may not do want on it; a
// request from inside the daemon (no Creds) passes. what names the
// request in the answer.
func CheckModel(ctx context.Context, model string, permits Permits, want uint32, what string) error {
	c, ok := CredsOf(ctx)
	if !ok || permits(model, c.Uid, c.Gid, c.InGroup, want) {
		return nil
	}
	return Err(ErrAccess, "%s: model %s: uid %d may not %s it", what, model, c.Uid, accessWord(want))
}

// ReadAccess is the Access bit (store.AccessRead) CheckContent asks for.
const ReadAccess = 4

// CheckContent refuses (ErrAccess) a request of ctx's session that
// returns the content of model's files, or scores computed from it, when
// permits (store.Models.FilesPermit) says its opener may not read them, as
// the kernel would refuse a read of one through the mount; a request from
// inside the daemon passes. what names the request in the answer.
func CheckContent(ctx context.Context, model string, permits Permits, what string) error {
	c, ok := CredsOf(ctx)
	if !ok || permits(model, c.Uid, c.Gid, c.InGroup, ReadAccess) {
		return nil
	}
	return Err(ErrAccess, "%s: model %s: uid %d may not read its files", what, model, c.Uid)
}

// accessWord names want in an answer.
func accessWord(want uint32) string {
	if want&2 != 0 {
		return "write to"
	}
	return "read"
}
