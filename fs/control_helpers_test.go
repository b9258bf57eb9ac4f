package fs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// ctl is one session on a control file: a descriptor opened O_RDWR, used
// the way a shell uses `exec 3<>file` (writes and reads move one offset).
type ctl struct {
	t testing.TB
	f *os.File
}

// openCtl opens .ucm/<name> for a session, closed at the end of the test.
func openCtl(t testing.TB, m *testMount, name string) *ctl {
	t.Helper()
	f, err := os.OpenFile(m.path(".ucm", name), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open .ucm/%s: %v", name, err)
	}
	t.Cleanup(func() { f.Close() })
	return &ctl{t: t, f: f}
}

// send writes raw request bytes.
func (c *ctl) send(s string) {
	c.t.Helper()
	if n, err := c.f.Write([]byte(s)); err != nil || n != len(s) {
		c.t.Fatalf("write %q: %d, %v", clip([]byte(s)), n, err)
	}
}

// answers reads everything the session has to say (until EOF).
func (c *ctl) answers() string {
	c.t.Helper()
	b, err := io.ReadAll(c.f)
	if err != nil {
		c.t.Fatalf("read answers: %v", err)
	}
	return string(b)
}

// ask sends one request line and returns its answer line, without the
// line end.
func (c *ctl) ask(req string) string {
	c.t.Helper()
	a, err := c.tryAsk(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return a
}

// tryAsk is ask for goroutines other than the test's: it returns errors.
func (c *ctl) tryAsk(req string) (string, error) {
	if _, err := c.f.Write([]byte(req + "\n")); err != nil {
		return "", fmt.Errorf("write %q: %w", clip([]byte(req)), err)
	}
	b, err := io.ReadAll(c.f)
	if err != nil {
		return "", fmt.Errorf("read the answer to %q: %w", clip([]byte(req)), err)
	}
	a := string(b)
	if strings.Count(a, "\n") != 1 || !strings.HasSuffix(a, "\n") {
		return "", fmt.Errorf("request %q: answer %q is not one line", clip([]byte(req)), clip(b))
	}
	return strings.TrimSuffix(a, "\n"), nil
}

// mustOK asks and fails the test unless the answer starts with "ok".
func (c *ctl) mustOK(req string) string {
	c.t.Helper()
	a := c.ask(req)
	if !strings.HasPrefix(a, "ok") {
		c.t.Fatalf("request %q: %q", clip([]byte(req)), a)
	}
	return a
}

// errnoOfAnswer is the ERRNO of an "err ERRNO message" answer, or "".
func errnoOfAnswer(a string) string {
	f := strings.Fields(a)
	if len(f) < 2 || f[0] != "err" {
		return ""
	}
	return f[1]
}

// idList joins the hex ids of keys with spaces.
func idList(keys []format.Key) string {
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k.ID.String())
	}
	return b.String()
}

// readStats decodes .ucm/stats of the mount.
func readStats(t testing.TB, m *testMount) store.Stats {
	t.Helper()
	raw, err := os.ReadFile(m.path(".ucm", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var st store.Stats
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("stats: %v\n%s", err, raw)
	}
	return st
}

// putKeys publishes blocks 0..n-1 of model straight through the stack.
func putKeys(t testing.TB, st *tiers.Stack, model string, n int) []format.Key {
	t.Helper()
	keys := make([]format.Key, n)
	for i := range keys {
		k, d := testBlock(model, i, 64)
		put(t, st, k, d)
		keys[i] = k
	}
	return keys
}

// absentKeys are n keys of model that no test stores.
func absentKeys(model string, n int) []format.Key {
	keys := make([]format.Key, n)
	for i := range keys {
		keys[i], _ = testBlock(model, 1_000_000+i, 64)
	}
	return keys
}

// clip returns the start of b as a string, marked when cut, for messages.
func clip(b []byte) string {
	const clipLen = 80
	if len(b) <= clipLen {
		return string(b)
	}
	return string(b[:clipLen]) + "..."
}

// metricsHandler serves the mount's metrics (installed at mount).
func (m *testMount) metricsHandler() http.Handler { return m.metrics.Handler() }
