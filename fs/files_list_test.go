package fs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// TestFilesListingCached: a files model's directory (the model's root
// and one below it), whose listing the kernel may keep (FOPEN_CACHE_DIR),
// follows every change of what the directory holds, each listed twice
// (the first fills the cache, the second reads it): a file published by
// another process's close, one put into the tiers or removed from them
// behind the kernel's back (a GPU dump, another daemon, an eviction), an
// unlink, a rename, a mkdir. A writer's staging file is listed to its
// writer and never to another user. A directory kept open and rewound
// after each of three changes lists each (the caches its rewinds
// refilled are followed too). With the notification off it fails: the
// kernel does serve the listings from its cache.
func TestFilesListingCached(t *testing.T) {
	m := newSharedMount(t)
	root := m.model(t, "eng", "files")
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "d"), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"", "d"} {
		p := filepath.Join(root, dir)
		names := map[string]bool{}
		if dir == "" {
			names["d"] = true
		}
		for _, n := range []string{"a.bin", "b.bin"} {
			if err := os.WriteFile(filepath.Join(p, n), []byte(n), 0o644); err != nil {
				t.Fatal(err)
			}
			names[n] = true
		}
		want := func(what string) {
			t.Helper()
			var w []string
			for n := range names {
				w = append(w, n)
			}
			slices.Sort(w)
			for range 2 { // the first listing fills the cache, the second reads it
				if got := listNames(t, p); !slices.Equal(got, w) {
					t.Fatalf("%s: %s: listing %v, want %v", dir, what, got, w)
				}
			}
		}
		want("two files")

		sh := exec.Command("sh", "-c", `printf x > "$1"`, "sh", filepath.Join(p, "c.bin"))
		if out, err := sh.CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		names["c.bin"] = true
		want("a file another process published at its close")

		behind := format.FileKey("eng", format.JoinFilePath(dir, "e.bin"))
		put(t, m.st, behind, []byte("e"))
		names["e.bin"] = true
		want("a file put behind the kernel's back")
		if err := m.st.Remove(behind); err != nil {
			t.Fatal(err)
		}
		delete(names, "e.bin")
		want("a file removed behind the kernel's back")

		if err := os.Remove(filepath.Join(p, "a.bin")); err != nil {
			t.Fatal(err)
		}
		delete(names, "a.bin")
		want("an unlink")
		if err := os.Rename(filepath.Join(p, "b.bin"), filepath.Join(p, "b2.bin")); err != nil {
			t.Fatal(err)
		}
		delete(names, "b.bin")
		names["b2.bin"] = true
		want("a rename")
		if err := os.Mkdir(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		names["sub"] = true
		want("a mkdir")

		// A directory kept open and rewound.
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		listFromStart(t, f)
		for _, n := range []string{"r1.bin", "r2.bin", "r3.bin"} {
			k := format.FileKey("eng", format.JoinFilePath(dir, n))
			put(t, m.st, k, []byte(n))
			if got := listFromStart(t, f); !slices.Contains(got, n) {
				t.Errorf("%s: a rewound listing %v lacks %s, put meanwhile", dir, got, n)
			}
		}
		f.Close()
		names["r1.bin"], names["r2.bin"], names["r3.bin"] = true, true, true
		want("three files put behind the kernel's back, rewinds between")

		// A staging file: its writer lists it, another user never does.
		staging := filepath.Join(p, "s.bin.tmp.1.2.abc")
		sf, err := os.OpenFile(staging, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if got := listNames(t, p); !slices.Contains(got, filepath.Base(staging)) {
			t.Errorf("%s: the writer's listing %v lacks its staging file", dir, got)
		}
		cmd := exec.Command("ls", p)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), ".tmp.") || !strings.Contains(string(out), "c.bin") {
			t.Errorf("%s: another user's listing: %v %q", dir, err, out)
		}
		sf.Close()
		if err := os.Remove(staging); err != nil {
			t.Fatal(err)
		}
		want("the staging file removed")
	}
}

// TestFilesListingForgotten: the cached listing of a files directory is
// forgotten with the directory's node, so a user who lists many
// directories leaves no more entries than the kernel holds nodes.
func TestFilesListingForgotten(t *testing.T) {
	m := newMount(t, Options{})
	root := m.model(t, "eng", "files")
	for i := range 20 {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i))
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		listNames(t, p)
	}
	count := m.srv.state.listings.FilesDirs
	// (A write-back after a listing may drop its entry already: a
	// change of what a directory holds, as far as the index can tell.)
	if n := count(); n < 10 {
		t.Fatalf("%d cached listings of files directories after listing 20", n)
	}
	// The kernel forgets the directories' nodes (told to drop their
	// entries): their listings' entries go.
	model := m.srv.state.root.GetChild("eng")
	for i := range 20 {
		// ENOENT: the kernel has dropped that entry already.
		if errno := model.NotifyEntry(fmt.Sprintf("d%02d", i)); errno != 0 && errno != errnoMissing {
			t.Fatalf("d%02d: %v", i, errno)
		}
	}
	for i := 0; count() > 0; i++ {
		if i == 1000 {
			t.Fatalf("%d cached listings left after the kernel forgot the directories", count())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
