package fs

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPublishedNameOneLookup: the first stat of a file published by the
// rename of its staging file is one LOOKUP, in a files model and in a
// ucmb shard. The kernel moved its entry of the pending node to the final
// name; the daemon drops that entry once the rename is answered, where
// before the kernel looked the name up, found the published file's node,
// forgot it and looked the name up again.
func TestPublishedNameOneLookup(t *testing.T) {
	var log lockedBuffer
	m := newMount(t, Options{Passthrough: true, Debug: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err := os.Mkdir(m.path("eng"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(m.path("eng"), "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	k, d := testBlock(testModel, 91004, 4096)
	os.Mkdir(m.path(testModel), 0o755)
	finals := []string{m.path("eng", "page.bin"), m.keyPath(k)}
	for i, final := range finals {
		before := m.srv.state.namesDropped.Load()
		tmp := final + ".tmp"
		if err := os.WriteFile(tmp, d, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, final); err != nil {
			t.Fatalf("rename %s: %v", tmp, err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for m.srv.state.namesDropped.Load() == before { // it follows the rename's answer
			if time.Now().After(deadline) {
				t.Fatal("no notification after the publishing rename")
			}
			time.Sleep(time.Millisecond)
		}
		mark := len(log.String())
		var st unix.Stat_t
		if err := unix.Stat(final, &st); err != nil || st.Size != int64(len(d)) {
			t.Fatalf("stat %s: size %d, %v", final, st.Size, err)
		}
		name := final[strings.LastIndexByte(final, '/')+1:]
		lookups := 0
		for _, line := range strings.Split(log.String()[mark:], "\n") {
			if strings.Contains(line, "LOOKUP") && strings.Contains(line, name) && strings.Contains(line, "rx ") {
				lookups++
			}
		}
		if lookups != 1 {
			t.Errorf("file %d: the first stat after the publishing rename sent %d LOOKUPs of its name, want 1", i, lookups)
		}
		reread(t, final, d)
	}
}
