package fs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// newOpenMount mounts st with allow_other on a mount point every user can
// reach (t.TempDir's directories are 0700).
func newOpenMount(t *testing.T, opts Options) *testMount {
	t.Helper()
	requireFUSE(t)
	return newOpenMountWith(t, newTestStack(t), opts)
}

// newOpenMountWith is newOpenMount of st, in a store made with sopts.
func newOpenMountWith(t *testing.T, st *tiers.Stack, opts Options, sopts ...store.Options) *testMount {
	t.Helper()
	requireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: other users must reach the mount")
	}
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	opts.AllowOther = true
	return mountAt(t, mnt, st, opts, sopts...)
}

// openAs runs `cat FILE` as uid:gid with supplementary groups and reports
// whether the open worked.
func openAs(file string, uid, gid uint32, groups ...uint32) error {
	cmd := exec.Command("cat", file)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

const (
	otherUID   = 65534 // nobody
	otherGID   = 65533
	controlGID = 65534
)

// TestControlPermissions: by default only the mounting user (and root)
// may open the session files, even on an allow_other mount; stats stays
// readable by all.
func TestControlPermissions(t *testing.T) {
	m := newOpenMount(t, Options{})
	if err := openAs(m.path(".ucm", "stats"), otherUID, otherGID); err != nil {
		t.Errorf("another user cannot read stats: %v", err)
	}
	for _, name := range []string{"lookup", "prefetch", "flush", "topk"} {
		if err := openAs(m.path(".ucm", name), otherUID, otherGID); err == nil {
			t.Errorf("another user opened .ucm/%s", name)
		}
		if err := openAs(m.path(".ucm", name), otherUID, controlGID); err == nil {
			t.Errorf("a user of group %d opened .ucm/%s without a control group", controlGID, name)
		}
	}
}

// TestControlGroup: with a control group the files are 0660 with that
// group, and its members (by primary or supplementary group) may open
// them; other users still may not.
func TestControlGroup(t *testing.T) {
	if _, err := Mount(t.TempDir(), testStore(t, newTestStack(t)), Options{ControlGroup: "no-such-group-here"}); err == nil {
		t.Fatal("mount with an unknown control group worked")
	}
	m := newOpenMount(t, Options{ControlGroup: "65534"})
	p := m.path(".ucm", "lookup")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o660 || st.Gid != controlGID {
		t.Errorf("lookup: mode %v gid %d", fi.Mode(), st.Gid)
	}
	if err := openAs(p, otherUID, controlGID); err != nil {
		t.Errorf("member by primary group refused: %v", err)
	}
	if err := openAs(p, otherUID, otherGID, 100, controlGID); err != nil {
		t.Errorf("member by supplementary group refused: %v", err)
	}
	if err := openAs(p, otherUID, otherGID); err == nil {
		t.Error("a non-member opened the file")
	}
}

// privateAndPublic makes a 0700 model "private" and a 0755 one "public"
// with a block each, and returns the blocks' keys.
func privateAndPublic(t *testing.T, m *testMount) (private, public format.Key) {
	t.Helper()
	key, data := testBlock("private", 1, 4096)
	pub, pubData := testBlock("public", 1, 4096)
	for _, c := range []struct {
		model string
		mode  os.FileMode
	}{{"private", 0o700}, {"public", 0o755}} {
		if err := os.Mkdir(m.path(c.model), c.mode); err != nil {
			t.Fatal(err)
		}
	}
	for k, d := range map[format.Key][]byte{key: data, pub: pubData} {
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
	}
	return key, pub
}

// TestControlModelAccess: a member of the control group asks .ucm/lookup
// about a root-only (0700) model through the mount and is refused
// (EACCES), as a stat of the block would be; about a model it may read
// it gets the answer.
func TestControlModelAccess(t *testing.T) {
	m := newOpenMount(t, Options{ControlGroup: "65534"})
	key, pub := privateAndPublic(t, m)
	answers := askAs(t, m.path(".ucm", "lookup"), otherUID, controlGID,
		"exists private "+key.ID.String(), "exists public "+pub.ID.String())
	if len(answers) != 2 || !strings.HasPrefix(answers[0], "err EACCES") || answers[1] != "ok 1 1" {
		t.Fatalf("answers %q: want EACCES for the 0700 model, \"ok 1 1\" for the 0755 one", answers)
	}
}

// TestControlSessionsBounded: one user holds at most
// control.MaxSessionsPerUser control sessions open (each may buffer
// requests and answers in the daemon): the next open fails with EMFILE,
// and works again once one is closed.
func TestControlSessionsBounded(t *testing.T) {
	m := newMount(t, Options{})
	var open []*os.File
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	for i := 0; i < control.MaxSessionsPerUser; i++ {
		f, err := os.OpenFile(m.path(".ucm", []string{"lookup", "prefetch", "flush"}[i%3]), os.O_RDWR, 0)
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
		open = append(open, f)
	}
	if f, err := os.OpenFile(m.path(".ucm", "topk"), os.O_RDWR, 0); !errors.Is(err, syscall.EMFILE) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("session %d: %v, want EMFILE", control.MaxSessionsPerUser+1, err)
	}
	open[0].Close()
	open = open[1:]
	// The kernel sends the RELEASE that ends the session after close(2)
	// returns: wait for it (a bound, not a pause: the loop ends as soon
	// as the place is free).
	deadline := time.Now().Add(time.Minute)
	for {
		f, err := os.OpenFile(m.path(".ucm", "topk"), os.O_RDWR, 0)
		if err == nil {
			open = append(open, f)
			return
		}
		if !errors.Is(err, syscall.EMFILE) || time.Now().After(deadline) {
			t.Fatalf("an open after a close: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}
