package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKVEventsKeyPattern: user.ucm.key_pattern set on a files model that
// holds files (in memory and written back) re-announces them: a
// subscriber of --kv-events is told each removed under the hash the
// default rule gave and stored under the pattern's, in .ucm/events'
// order, and a file rewritten or unlinked after is removed under the
// hash it was stored under. The subscriber ends up believing what the
// index holds, and is never told of a removal of a hash it does not hold.
func TestKVEventsKeyPattern(t *testing.T) {
	py := zmqPython(t)
	dir := testDir(t)
	mnt, tier := filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	os.Mkdir(mnt, 0o755)
	args := []string{"--kv-events", "tcp://127.0.0.1:0", "--kv-events-models", "m,s"}
	r := &kvRun{d: mountUCM(t, mountOpts{Mnt: mnt, Tier: tier, Args: args}), hashes: map[string]uint64{}}
	sentinel := strings.Repeat("e", 32)
	sub := startSubscriber(t, py, r.d, idHash(sentinel))

	// Names both rules read: the default rule the last 16 hex digits,
	// the pattern the first 16.
	root := filesModel(t, r.d, "s")
	var paths []string
	for i := range 4 {
		p := filepath.Join(root, fmt.Sprintf("%016x%048x.bin", 0xa000+i, i+1))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	flushAll(t, r.d)
	if err := unix.Setxattr(root, "user.ucm.key_pattern", []byte(`^([0-9a-f]{16})`), 0); err != nil {
		t.Fatalf("key_pattern: %v", err)
	}
	if err := os.WriteFile(paths[0], []byte("rewritten"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.unlink(t, paths[1])
	for i, p := range paths {
		r.hashes[p] = uint64(0xa000 + i)
	}
	flushAll(t, r.d)
	r.check(t, sub, sentinel, true)
}
