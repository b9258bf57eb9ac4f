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

// Proc is the caller's task as the daemon reads it: /proc/<pid> held
// open as a directory, and its status read through that descriptor.
//
// A FUSE request names its caller's thread by number only. The thread
// cannot end while the daemon handles its request (the kernel waits for
// the answer, killably only until the daemon has read the request), but
// a number is only a number: a task read under it that is not the
// caller's would lend the request another process's groups, root and
// working directory. So OpenProc checks that the task has the request's
// fsuid and fsgid (what the kernel put in the request; a number reused by
// a process of another user or group is refused), and every later read
// goes through the one descriptor, which names that task alone: if it
// ends and its number is reused meanwhile, reads fail (ESRCH) instead of
// reading the new process.
type Proc struct {
	fd     int
	groups []uint32
}

// ErrNotCaller: the task under the caller's number is not the caller
// (EACCES: the request is refused as an access it cannot be granted).
var ErrNotCaller = fmt.Errorf("the caller's process is gone: %w", ErrAccess)

// OpenProc opens the caller's task (see Proc); Close releases it.
func (c Caller) OpenProc() (*Proc, error) {
	fd, err := unix.Open("/proc/"+strconv.FormatUint(uint64(c.Pid), 10), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w: %w", c.Pid, ErrNotCaller, err)
	}
	p := &Proc{fd: fd}
	if err := p.readStatus(c); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// readStatus reads the task's status through its descriptor: it must
// have c's fsuid and fsgid; its supplementary groups are kept.
func (p *Proc) readStatus(c Caller) error {
	fd, err := unix.Openat(p.fd, "status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("pid %d: %w: %w", c.Pid, ErrNotCaller, err)
	}
	f := os.NewFile(uintptr(fd), "status")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("pid %d: %w: %w", c.Pid, ErrNotCaller, err)
	}
	fsuid, fsgid, groups := int64(-1), int64(-1), false
	for _, l := range strings.Split(string(b), "\n") {
		name, rest, _ := strings.Cut(l, ":")
		fields := strings.Fields(rest)
		switch {
		case name == "Uid" && len(fields) == 4:
			fsuid, _ = strconv.ParseInt(fields[3], 10, 64)
		case name == "Gid" && len(fields) == 4:
			fsgid, _ = strconv.ParseInt(fields[3], 10, 64)
		case name == "Groups":
			groups = true
			for _, f := range fields {
				g, err := strconv.ParseUint(f, 10, 32)
				if err != nil {
					return fmt.Errorf("groups of pid %d: %q", c.Pid, f)
				}
				p.groups = append(p.groups, uint32(g))
			}
		}
	}
	if !groups || fsuid != int64(c.Uid) || fsgid != int64(c.Gid) {
		return fmt.Errorf("pid %d runs as fsuid %d fsgid %d, the request came from uid %d gid %d: %w",
			c.Pid, fsuid, fsgid, c.Uid, c.Gid, ErrNotCaller)
	}
	return nil
}

// Groups is the task's supplementary groups.
func (p *Proc) Groups() []uint32 { return p.groups }

// Dir is the descriptor of the task's /proc directory: open its root
// and cwd relative to it (openat), never by the number again.
func (p *Proc) Dir() int { return p.fd }

// Close releases the descriptor.
func (p *Proc) Close() {
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}

// Groups returns the supplementary groups of the caller's process, read
// through OpenProc (a FUSE request names only the primary group).
func (c Caller) Groups() ([]uint32, error) {
	p, err := c.OpenProc()
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Groups(), nil
}

// InGroup reports whether the caller is in group gid, its primary one or
// one of Groups. A process that is gone, or is not the caller's (see
// Proc), is in no further group: the check fails closed.
func (c Caller) InGroup(gid uint32) bool {
	if c.Gid == gid {
		return true
	}
	gs, err := c.Groups()
	return err == nil && slices.Contains(gs, gid)
}

// Permits is the rule of store.Store.ModelPermits, as CheckModel takes it.
type Permits func(model string, uid, gid uint32, inGroup func(uint32) bool, want uint32) bool

// CheckModel refuses (ErrAccess) a request of ctx's caller that names
// model when permits says the caller may not do want on it; a request
// from inside the daemon (no caller) passes. what names the request in
// the answer.
func CheckModel(ctx context.Context, model string, permits Permits, want uint32, what string) error {
	c, ok := CallerOf(ctx)
	if !ok || permits(model, c.Uid, c.Gid, c.InGroup, want) {
		return nil
	}
	return Err(ErrAccess, "%s: model %s: uid %d may not %s it", what, model, c.Uid, accessWord(want))
}

// ReadAccess is the Access bit (store.AccessRead) CheckContent asks for.
const ReadAccess = 4

// CheckContent refuses (ErrAccess) a request of ctx's caller that returns
// the content of model's files, or scores computed from it, when permits
// (store.Store.FilesPermit) says the caller may not read them, as the
// kernel would refuse a read of one through the mount; a request from
// inside the daemon passes. what names the request in the answer.
func CheckContent(ctx context.Context, model string, permits Permits, what string) error {
	c, ok := CallerOf(ctx)
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
