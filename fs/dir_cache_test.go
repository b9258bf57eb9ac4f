package fs

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestShardListingCached: a shard directory's listing, which the kernel
// may keep (FOPEN_CACHE_DIR), follows every change of what the shard
// holds: a publish behind the kernel's back (a block put into the stack
// directly, as a GPU dump or another daemon's file), a removal behind its
// back (as an eviction drop), an unlink through the mount, and, in a
// directory kept open and rewound, three publishes behind its back (the
// caches the rewinds refilled are followed too). A writer's staging
// file is listed to its writer and never to another user.
func TestShardListingCached(t *testing.T) {
	m := newSharedMount(t)
	var keys []format.Key
	data := map[format.Key][]byte{}
	for i := 0; len(keys) < 7; i++ { // seven blocks of one shard
		k, d := testBlock(testModel, i, 256)
		if len(keys) == 0 || k.ID[0] == keys[0].ID[0] {
			keys = append(keys, k)
			data[k] = d
		}
	}
	shard := m.path(testModel, keys[0].ID.Shard())
	if err := os.MkdirAll(shard, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(m.path(testModel), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shard, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[:2] {
		put(t, m.st, k, data[k])
	}
	list := func() []string { t.Helper(); return listNames(t, shard) }
	want := func(what string, ks ...format.Key) {
		t.Helper()
		var names []string
		for _, k := range ks {
			names = append(names, k.FileName())
		}
		slices.Sort(names)
		for range 2 { // the first listing fills the cache, the second reads it
			if got := list(); !slices.Equal(got, names) {
				t.Fatalf("%s: listing %v, want %v", what, got, names)
			}
		}
	}
	want("two blocks", keys[0], keys[1])
	put(t, m.st, keys[2], data[keys[2]])
	want("a block published behind the kernel's back", keys[0], keys[1], keys[2])
	if err := m.st.Remove(keys[0]); err != nil {
		t.Fatal(err)
	}
	want("a block removed behind the kernel's back", keys[1], keys[2])
	if err := os.Remove(m.keyPath(keys[1])); err != nil {
		t.Fatal(err)
	}
	want("a block unlinked", keys[2])

	// A directory kept open and rewound.
	d, err := os.Open(shard)
	if err != nil {
		t.Fatal(err)
	}
	listFromStart(t, d)
	for _, k := range keys[4:7] {
		put(t, m.st, k, data[k])
		if got := listFromStart(t, d); !slices.Contains(got, k.FileName()) {
			t.Errorf("a rewound listing %v lacks %s, put meanwhile", got, k.FileName())
		}
	}
	d.Close()
	want("three blocks put behind the kernel's back, rewinds between", keys[2], keys[4], keys[5], keys[6])

	// A staging file: its writer lists it, another user never does.
	staging := m.keyPath(keys[3]) + format.StagingSuffix
	f, err := os.OpenFile(staging, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := list(); !slices.Contains(got, keys[3].FileName()+format.StagingSuffix) {
		t.Errorf("the writer's listing %v lacks its staging file", got)
	}
	cmd := exec.Command("ls", shard)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), format.StagingSuffix) || !strings.Contains(string(out), keys[2].FileName()) {
		t.Errorf("another user's listing: %v %q", err, out)
	}
}

// listNames lists directory p, sorted.
func listNames(t *testing.T, p string) []string {
	t.Helper()
	ents, err := os.ReadDir(p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// listFromStart rewinds the open directory d and lists it, sorted.
func listFromStart(t *testing.T, d *os.File) []string {
	t.Helper()
	if _, err := d.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// newSharedMount mounts a new stack with --allow-other, its mount point
// reachable by otherUID (t.TempDir makes its parent 0700).
func newSharedMount(t *testing.T) *testMount {
	t.Helper()
	m := newMount(t, Options{AllowOther: true})
	if err := os.Chmod(filepath.Dir(m.mnt), 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}
