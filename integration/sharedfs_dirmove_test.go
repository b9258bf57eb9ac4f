package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestSharedFSDirMove: host A renames a directory of a files model that
// holds n files (mv d1 d2) while host B, which had read every file,
// lists both names over and over. B comes to list d2 whole and d1 gone,
// and so does C, which had read the files too: a listing checks the
// directory on the share (tiers/dir/shared_tree.go). Every file reads as
// it was under d2 on every host. B never lists some of the files under d1
// and some under d2, nor neither whole (subtest never half): A renames
// the directory on the share in one rename(2) (store/files_shared.go),
// and B, once it finds d1 gone, drops its kernel's entries of the
// parent's subdirectories, the miss of d2 with them (fs/filesdir/shared.go).
func TestSharedFSDirMove(t *testing.T) {
	for _, name := range sharedFSNames {
		t.Run(name, func(t *testing.T) {
			fs := needSharedFS(t, name)
			hs := threeHosts(t, fs)
			a, b := hs[0], hs[1]
			const model, n = "mv", 32
			filesModel(t, a, model)
			if err := os.Mkdir(a.path(model, "d1"), 0o755); err != nil {
				t.Fatal(err)
			}
			data := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("moved %d;", i)), 4096) }
			file := func(i int) string { return fmt.Sprintf("f%02d.bin", i) }
			for i := range n {
				if err := tmpRename(a.path(model, "d1", "."+file(i)), a.path(model, "d1", file(i)), data(i)); err != nil {
					t.Fatal(err)
				}
			}
			flushAll(t, a)
			for h, d := range hs[1:] {
				until(t, fmt.Sprintf("d1's %d files on host %c", n, 'B'+h), func() bool {
					for i := range n {
						if !readsAs(d.path(model, "d1", file(i)), data(i)) {
							return false
						}
					}
					return true
				})
			}

			// B lists d1 and then d2 until d2 has every file and d1 is gone.
			var mixed []string
			last := ""
			polls := 0
			done := make(chan time.Duration, 1)
			go func() {
				start := time.Now()
				for deadline := start.Add(time.Minute); time.Now().Before(deadline); polls++ {
					n1, err1 := filesIn(b.path(model, "d1"))
					n2, err2 := filesIn(b.path(model, "d2"))
					switch {
					case n1 == n && n2 == 0, n1 == n && n2 == n:
						// before the move (d2 listed after it: both whole)
					case errors.Is(err1, os.ErrNotExist) && n2 == n:
						done <- time.Since(start)
						return
					default:
						state := fmt.Sprintf("after %v: d1 %d files (%v), d2 %d files (%v)",
							time.Since(start).Round(time.Millisecond), n1, err1, n2, err2)
						if len(mixed) < 5 {
							mixed = append(mixed, state)
						}
						last = state
					}
				}
				done <- -1
			}()
			start := time.Now()
			if err := os.Rename(a.path(model, "d1"), a.path(model, "d2")); err != nil {
				t.Fatalf("mv d1 d2 on A: %v", err)
			}
			renamed := time.Since(start)
			took := <-done
			if took < 0 {
				t.Errorf("host B: d2 whole and d1 gone not after a minute; mixed states: %v ... %s", mixed, last)
			} else {
				t.Logf("%s: mv of %d files took %v on A; host B saw d2 whole and d1 gone %v after the move began (%d polls of both)",
					name, n, renamed, took, polls)
			}
			t.Run("never half", func(t *testing.T) {
				if len(mixed) > 0 {
					t.Errorf("host B listed a move half done: %v ... %s", mixed, last)
				}
			})
			for h, d := range hs {
				for i := range n {
					if !readsAs(d.path(model, "d2", file(i)), data(i)) {
						t.Errorf("host %c: d2/%s does not read as it was under d1", 'A'+h, file(i))
					}
				}
				if n1, err := filesIn(d.path(model, "d1")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("host %c lists d1 after the move: %d files (%v)", 'A'+h, n1, err)
				}
			}
		})
	}
}

// filesIn is how many files directory dir lists (its error where the
// listing fails).
func filesIn(dir string) (int, error) {
	es, err := os.ReadDir(dir)
	n := 0
	for _, e := range es {
		if !e.IsDir() {
			n++
		}
	}
	return n, err
}
