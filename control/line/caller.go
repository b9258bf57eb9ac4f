package line

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Groups returns the supplementary groups of the caller's process, from
// /proc/<pid>/status (a FUSE request names only the primary group).
func (c Caller) Groups() ([]uint32, error) {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(c.Pid), 10) + "/status")
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(l, "Groups:")
		if !ok {
			continue
		}
		var gs []uint32
		for _, f := range strings.Fields(rest) {
			g, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("groups of pid %d: %q", c.Pid, f)
			}
			gs = append(gs, uint32(g))
		}
		return gs, nil
	}
	return nil, fmt.Errorf("no groups line for pid %d", c.Pid)
}

// InGroup reports whether the caller is in group gid, its primary one or
// one of Groups. A process that is gone, or a status that does not read,
// is in no further group: the check fails closed.
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
