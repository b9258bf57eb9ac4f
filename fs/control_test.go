package fs

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/control"
	"github.com/ucmfs/ucmfs/format"
)

// TestControlFiles: .ucm lists every control file; the session files are
// 0600 for the mounting user, size 0.
func TestControlFiles(t *testing.T) {
	m := newMount(t, Options{})
	ents, err := os.ReadDir(m.path(".ucm"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "events flush lookup prefetch stats topk" {
		t.Fatalf(".ucm holds %q", got)
	}
	for _, name := range []string{"lookup", "prefetch", "flush", "topk", "events"} {
		fi, err := os.Stat(m.path(".ucm", name))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != 0o600 || fi.Size() != 0 || st.Uid != uint32(os.Getuid()) || st.Gid != uint32(os.Getgid()) {
			t.Errorf("%s: mode %v size %d owner %d:%d", name, fi.Mode(), fi.Size(), st.Uid, st.Gid)
		}
		if err := os.Chmod(m.path(".ucm", name), 0o666); errnoOf(err) != syscall.EPERM {
			t.Errorf("chmod %s: %v, want EPERM", name, err)
		}
		if err := os.Remove(m.path(".ucm", name)); errnoOf(err) != syscall.EPERM {
			t.Errorf("rm %s: %v, want EPERM", name, err)
		}
	}
}

// TestLookup: exists answers the count and the bitmap, prefix the length
// of the longest present prefix, on blocks in memory and on the
// directory tier only.
func TestLookup(t *testing.T) {
	m := newMount(t, Options{})
	keys := putKeys(t, m.st, testModel, 6)
	// Blocks 4 and 5 live on the directory tier only.
	if err := m.st.FlushAll(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[4:] {
		if err := m.st.Evict(k); err != nil {
			t.Fatal(err)
		}
	}
	abs := absentKeys(testModel, 2)
	c := openCtl(t, m, "lookup")
	ids := idList([]format.Key{keys[0], keys[1], abs[0], keys[4], abs[1], keys[5]})
	if a := c.ask("exists " + testModel + " " + ids); a != "ok 4 110101" {
		t.Errorf("exists: %q", a)
	}
	if a := c.ask("prefix " + testModel + " " + ids); a != "ok 2" {
		t.Errorf("prefix: %q", a)
	}
	if a := c.ask("prefix " + testModel + " " + idList(keys)); a != "ok 6" {
		t.Errorf("prefix of all present: %q", a)
	}
	if a := c.ask("prefix " + testModel + " " + idList(abs)); a != "ok 0" {
		t.Errorf("prefix of none present: %q", a)
	}
	// Tabs, runs of spaces and a CRLF line end are accepted.
	if a := c.ask("\texists  " + testModel + "\t" + keys[0].ID.String() + "  \r"); a != "ok 1 1" {
		t.Errorf("loose spacing: %q", a)
	}
	st := readStats(t, m)
	if st.Lookups != 5 || st.LookupIDs != 6+3+6+1+1 || st.LookupHits != 4+2+6+0+1 {
		t.Errorf("stats: lookups %d ids %d hits %d", st.Lookups, st.LookupIDs, st.LookupHits)
	}
}

// TestControlErrors: every malformed request gets one err line with the
// right errno, logs, counts, and the session goes on serving.
func TestControlErrors(t *testing.T) {
	m := newMount(t, Options{})
	keys := putKeys(t, m.st, testModel, 2)
	good := keys[0].ID.String()
	cases := []struct{ file, req, errno string }{
		{"lookup", "find " + testModel + " " + good, "EINVAL"},
		{"lookup", "exists", "EINVAL"},
		{"lookup", "exists " + testModel, "EINVAL"},
		{"lookup", "exists .hidden " + good, "EINVAL"},
		{"lookup", "exists a/b " + good, "EINVAL"},
		{"lookup", "exists no-such-model " + good, "ENOENT"},
		{"lookup", "exists " + testModel + " " + good + " xyz", "EINVAL"},
		{"lookup", "exists " + testModel + " " + strings.ToUpper(good), "EINVAL"},
		{"lookup", "prefix " + testModel + " " + good + "0", "EINVAL"},
		{"lookup", "prefix " + testModel + " " + good[:31] + "g", "EINVAL"},
		{"lookup", "exists " + testModel + " " + good + "\x00", "EINVAL"},
		{"prefetch", testModel, "EINVAL"},
		{"prefetch", "no-such-model " + good, "ENOENT"},
		{"prefetch", testModel + " nothex", "EINVAL"},
		{"flush", "some", "EINVAL"},
		{"flush", "model", "EINVAL"},
		{"flush", "model no-such-model", "ENOENT"},
		{"flush", "all now", "EINVAL"},
		{"flush", "model " + testModel + " " + testModel, "EINVAL"},
	}
	sessions := map[string]*ctl{}
	for _, c := range cases {
		s := sessions[c.file]
		if s == nil {
			s = openCtl(t, m, c.file)
			sessions[c.file] = s
		}
		a := s.ask(c.req)
		if errnoOfAnswer(a) != c.errno || len(strings.Fields(a)) < 3 {
			t.Errorf("%s %q: %q, want err %s <message>", c.file, c.req, a, c.errno)
		}
	}
	// The same sessions still answer.
	if a := sessions["lookup"].ask("exists " + testModel + " " + good); a != "ok 1 1" {
		t.Errorf("lookup after errors: %q", a)
	}
	if a := sessions["flush"].ask("all"); a != "ok flushed" {
		t.Errorf("flush after errors: %q", a)
	}
	if st := readStats(t, m); st.ControlErrors != int64(len(cases)) {
		t.Errorf("control_errors %d, want %d", st.ControlErrors, len(cases))
	}
}

// TestControlLimits: more than control.MaxIDs ids, or a line longer than
// control.MaxRequest, is E2BIG; the session goes on. control.MaxIDs ids are fine.
func TestControlLimits(t *testing.T) {
	m := newMount(t, Options{})
	keys := putKeys(t, m.st, testModel, 1)
	id := keys[0].ID.String()
	c := openCtl(t, m, "lookup")
	ids := strings.TrimSuffix(strings.Repeat(id+" ", control.MaxIDs), " ")
	a := c.ask("exists " + testModel + " " + ids)
	if want := "ok " + fmt.Sprint(control.MaxIDs) + " " + strings.Repeat("1", control.MaxIDs); a != want {
		t.Errorf("exists of %d ids: %q", control.MaxIDs, clip([]byte(a)))
	}
	if a := c.ask("exists " + testModel + " " + ids + " " + id); errnoOfAnswer(a) != "E2BIG" {
		t.Errorf("exists of %d ids: %q, want E2BIG", control.MaxIDs+1, a)
	}
	// A line past control.MaxRequest, sent in pieces: one E2BIG, then service.
	long := "exists " + testModel + " " + strings.Repeat(id+" ", control.MaxRequest/len(id))
	c.send(long[:len(long)/2])
	c.send(long[len(long)/2:])
	c.send("\nprefix " + testModel + " " + id + "\n")
	if a := c.answers(); !strings.HasPrefix(a, "err E2BIG ") || !strings.HasSuffix(a, "\nok 1\n") || strings.Count(a, "\n") != 2 {
		t.Errorf("over-long line then a request: %q", a)
	}
}

// TestSessionFraming: a request may come in pieces, several in one
// write; a read answers an unterminated line; blank lines get nothing;
// sessions on two descriptors are separate.
func TestSessionFraming(t *testing.T) {
	m := newMount(t, Options{})
	keys := putKeys(t, m.st, testModel, 3)
	a, b := openCtl(t, m, "lookup"), openCtl(t, m, "lookup")
	req := "exists " + testModel + " " + idList(keys)
	a.send(req[:5])
	a.send(req[5:40])
	if got := b.answers(); got != "" {
		t.Fatalf("session b read %q of a's request", got)
	}
	a.send(req[40:] + "\n")
	if got := a.answers(); got != "ok 3 111\n" {
		t.Errorf("request in pieces: %q", got)
	}
	a.send("\n\n" + req + "\nprefix " + testModel + " " + idList(keys[:2]) + "\n  \n")
	if got := a.answers(); got != "ok 3 111\nok 2\n" {
		t.Errorf("two requests in one write: %q", got)
	}
	b.send("prefix " + testModel + " " + keys[0].ID.String())
	if got := b.answers(); got != "ok 1\n" {
		t.Errorf("unterminated request answered at read: %q", got)
	}
	if got := a.answers() + b.answers(); got != "" {
		t.Errorf("answers read twice: %q", got)
	}
	// pread and pwrite at any offset work the same.
	if _, err := a.f.WriteAt([]byte(req+"\n"), 12345); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := a.f.ReadAt(buf, 0)
	if string(buf[:n]) != "ok 3 111\n" {
		t.Errorf("pread: %q, %v", buf[:n], err)
	}
	// O_TRUNC (echo req > file) is accepted; a write-only session's
	// answers are simply lost.
	f, err := os.OpenFile(m.path(".ucm", "lookup"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(req + "\n"); err != nil {
		t.Error(err)
	}
	f.Close()
}
