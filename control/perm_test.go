package control

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/store"
)

// askAs sends the lines of reqs to a new session of the control file name,
// as caller, and returns its answer lines.
func askAs(t *testing.T, e *Env, name string, caller line.Caller, reqs ...string) []string {
	t.Helper()
	var file File
	for _, fl := range table {
		if fl.Name == name {
			file = fl
		}
	}
	ctx := line.WithCaller(t.Context(), caller)
	c, err := caller.Capture(file.Paths)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := file.OpenAs(e, c)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	for _, r := range reqs {
		if _, err := ss.Write(ctx, []byte(r+"\n")); err != nil {
			t.Fatalf("%s: write %q: %v", name, r, err)
		}
	}
	return strings.Split(strings.TrimSuffix(string(readAnswers(t, ctx, ss)), "\n"), "\n")
}

// readAnswers reads a session's answers until there are none.
func readAnswers(tb testing.TB, ctx context.Context, ss *Session) []byte {
	var out []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := ss.Read(ctx, buf)
		if err != nil {
			tb.Fatalf("read: %v", err)
		}
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
	}
}

// processAs starts a process running as uid:gid and returns its pid, the
// caller of requests that read it (line.Proc checks the task has the
// request's fsuid and fsgid); it ends with the test.
func processAs(tb testing.TB, uid, gid uint32) uint32 {
	tb.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	if err := cmd.Start(); err != nil {
		tb.Skipf("a process as uid %d: %v", uid, err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return uint32(cmd.Process.Pid)
}

// TestModelPermissions: a request that names a model is answered only
// for a caller that the same request through the mount would be allowed:
// reading blocks (lookup, prefetch, flush, topk, gpu load) needs search
// permission on the model, publishing (gpu dump) write permission too;
// root may do all. Else EACCES, and nothing of the model is told.
func TestModelPermissions(t *testing.T) {
	e, keys := fuzzEnv(t)
	root := line.Caller{Uid: 0, Gid: 0, Pid: processAs(t, 0, 0)}
	other := line.Caller{Uid: 65534, Gid: 65534, Pid: processAs(t, 65534, 65534)}
	id0, id3 := keys[0].ID.String(), keys[3].ID.String()

	// A sim region of the other user's own, for its GPU requests.
	region := filepath.Join(t.TempDir(), "kv")
	if err := os.WriteFile(region, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(region), 0o755)
	os.Chmod(filepath.Dir(filepath.Dir(region)), 0o755)
	if err := os.Chown(region, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	reads := map[string]string{
		"lookup":   "exists " + testModel + " " + id0,
		"prefetch": testModel + " " + id0,
		"flush":    "model " + testModel,
		"topk":     "topk " + testModel,
		"gpu":      "load 1 " + testModel + " " + id0 + ":0",
	}
	dump := "dump 1 " + testModel + " " + id3 + ":0:2048"
	register := "register sim " + region + " 65536"
	answer := func(who line.Caller, file, req string) string {
		if file == "gpu" {
			as := askAs(t, e, file, who, register, req)
			if !strings.HasPrefix(as[0], "ok") {
				t.Fatalf("register as uid %d: %q", who.Uid, as[0])
			}
			return as[len(as)-1]
		}
		return askAs(t, e, file, who, req)[0]
	}
	refused := func(a string) bool { return strings.HasPrefix(a, "err EACCES") }

	for _, mode := range []uint32{0o700, 0o750} {
		if err := e.store.Models().SetOwner(testModel, store.ModelOwner{Uid: 0, Gid: 0, Mode: mode}); err != nil {
			t.Fatal(err)
		}
		for file, req := range reads {
			if a := answer(other, file, req); !refused(a) {
				t.Errorf("mode %o: %s %q as another user: %q, want EACCES", mode, file, req, a)
			}
			if a := answer(root, file, req); refused(a) {
				t.Errorf("mode %o: %s %q as root: %q", mode, file, req, a)
			}
		}
	}
	// Readable by all, writable by root alone: reads pass, a dump does not.
	if err := e.store.Models().SetOwner(testModel, store.ModelOwner{Uid: 0, Gid: 0, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	for file, req := range reads {
		if a := answer(other, file, req); refused(a) {
			t.Errorf("mode 755: %s %q as another user: %q", file, req, a)
		}
	}
	if a := answer(other, "gpu", dump); !refused(a) {
		t.Errorf("mode 755: %q as another user: %q, want EACCES", dump, a)
	}
	if err := e.store.Models().SetOwner(testModel, store.ModelOwner{Uid: 65534, Gid: 65534, Mode: 0o700}); err != nil {
		t.Fatal(err)
	}
	if a := answer(other, "gpu", dump); !strings.HasPrefix(a, "ok") {
		t.Errorf("the owner's own dump: %q", a)
	}
}

// TestSessionIsOpeners: a session's requests are checked as its opener,
// and a write or read by a process with another fsuid or fsgid (root
// included: a setuid program handed the descriptor) is refused before
// any of its bytes join the session.
func TestSessionIsOpeners(t *testing.T) {
	e, keys := fuzzEnv(t)
	if err := e.store.Models().SetOwner(testModel, store.ModelOwner{Uid: 0, Gid: 0, Mode: 0o700}); err != nil {
		t.Fatal(err)
	}
	opener := line.Caller{Uid: 65534, Gid: 65534, Pid: processAs(t, 65534, 65534)}
	c, err := opener.Capture(false)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := fileNamed(t, "lookup").OpenAs(e, c)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	req := []byte("exists " + testModel + " " + keys[0].ID.String() + "\n")
	for _, w := range []line.Caller{{Uid: 0, Gid: 65534, Pid: 1}, {Uid: 65534, Gid: 0, Pid: 1}} {
		ctx := line.WithCaller(t.Context(), w)
		if _, err := ss.Write(ctx, req); !errors.Is(err, line.ErrNotOpener) || !errors.Is(err, line.ErrAccess) {
			t.Errorf("a write by uid %d gid %d: %v, want ErrNotOpener (EACCES)", w.Uid, w.Gid, err)
		}
		if _, err := ss.Read(ctx, make([]byte, 100)); !errors.Is(err, line.ErrNotOpener) {
			t.Errorf("a read by uid %d gid %d: %v, want ErrNotOpener", w.Uid, w.Gid, err)
		}
	}
	// Another process of the opener's uid and gid (a fork) uses it, as
	// the opener: root's 0700 model is refused.
	ctx := line.WithCaller(t.Context(), line.Caller{Uid: 65534, Gid: 65534, Pid: 1})
	if _, err := ss.Write(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := string(readAnswers(t, ctx, ss)); !strings.HasPrefix(got, "err EACCES") || strings.Count(got, "\n") != 1 {
		t.Errorf("the opener's request: %q, want one err EACCES (nothing of the refused writes)", got)
	}
}
