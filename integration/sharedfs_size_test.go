package integration

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSharedFSPinsAndSize: three hosts with one size on the shared tier
// (the tier entry's size, the same on each). Host B pins blocks it wrote
// and blocks A wrote that it read; every file on the share is then aged
// an hour (as if written long ago, so that eviction may take them), and
// the three hosts each write as much as the size at once. Eviction by
// A's and C's writes may take B's pinned blocks off the share, but
// never out of B's memory: they stay pinned there and read exact. The
// share's use, sampled while they write, passes the size by at most the
// bound tiers/dir/shared_size.go states (each host's view lacks what the
// others published since its last measure), though the three wrote
// three times it, and comes back under the size after: subtest size.
func TestSharedFSPinsAndSize(t *testing.T) {
	const mib = 1 << 20
	const size = 16 * mib
	for _, name := range sharedFSNames {
		t.Run(name, func(t *testing.T) {
			fs := needSharedFS(t, name)
			// With KV events each host checks the whole share each second
			// (else each minute): its view of what the others wrote, by
			// which it keeps the share under the size, is that old.
			hs := hostsOn(t, fs, hostsConfig{size: size, events: true})
			a, b := hs[0], hs[1]
			const model = "sz"
			blk := func(id string) []byte { return bigBlock(id, mib) }
			write := func(d *daemon, ids []string) error {
				for _, id := range ids {
					if err := writeVerdict(blockPath(d.Mnt, model, id), blk(id)); err != nil {
						return fmt.Errorf("%s: %w", id[:8], err)
					}
				}
				return nil
			}
			if err := os.Mkdir(a.path(model), 0o755); err != nil {
				t.Fatal(err)
			}
			until(t, "the model on B", func() bool { _, err := os.Stat(b.path(model)); return err == nil })

			// B pins 4 blocks of its own and 4 of A's, which it read.
			ofA, ofB := testIDs("pin-a", 4), testIDs("pin-b", 4)
			for _, w := range []struct {
				d   *daemon
				ids []string
			}{{a, ofA}, {b, ofB}} {
				if err := write(w.d, w.ids); err != nil {
					t.Fatal(err)
				}
				flushAll(t, w.d)
			}
			pinned := append(append([]string{}, ofA...), ofB...)
			until(t, "A's blocks read on B", func() bool {
				for _, id := range ofA {
					if !readsAs(blockPath(b.Mnt, model, id), blk(id)) {
						return false
					}
				}
				return true
			})
			for _, id := range pinned {
				if err := unix.Setxattr(blockPath(b.Mnt, model, id), "user.ucm.pinned", []byte("1"), 0); err != nil {
					t.Fatalf("pin %s on B: %v", id[:8], err)
				}
			}
			share := hs[2].Tier // through C's client
			old := time.Now().Add(-time.Hour)
			for _, p := range finalsUnder(share) {
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}

			// The three hosts write the size each, at once, while the
			// share's use is sampled.
			var wg sync.WaitGroup
			errs := make([]error, len(hs))
			for h, d := range hs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[h] = write(d, testIDs(fmt.Sprintf("fill-%d", h), size/mib))
				}()
			}
			stop := make(chan struct{})
			most := make(chan int64, 1)
			go func() {
				var m int64
				defer func() { most <- m }()
				for {
					m = max(m, shareUse(share))
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}()
			wg.Wait()
			for h, d := range hs {
				if errs[h] != nil {
					t.Errorf("host %c wrote: %v", 'A'+h, errs[h])
				}
				t.Logf("%s: host %c flushed: %v", name, 'A'+h, flushErr(d))
			}
			close(stop)
			peak := <-most
			use := shareUse(share)
			// The bound of tiers/dir/shared_size.go: each host measures the
			// share again once it published a sixteenth of the size since
			// its last measure, and has up to two files in flight (its
			// write-back workers): the others' part missing from a host's
			// view is at most that, for each of the two others.
			const bound = size + 2*(size/16+2*mib)
			t.Logf("%s: the share's use: at most %.1f MiB while the three wrote %d MiB each, %.1f MiB after (size %d MiB, bound %d MiB)",
				name, float64(peak)/mib, size/mib, float64(use)/mib, size/mib, bound/mib)
			t.Run("size", func(t *testing.T) {
				if peak > bound {
					t.Errorf("the share's use went past its size and the bound: at most %d bytes, size %d, bound %d", peak, size, bound)
				}
				// Over its size, the oldest files go even if younger than
				// KeepRecent: the share comes back under it.
				took := until(t, "the share back under its size", func() bool { return shareUse(share) <= size })
				t.Logf("%s: the share's use %.1f MiB, %v after the writes", name, float64(shareUse(share))/mib, took)
			})

			onShare := 0
			for _, id := range pinned {
				p := blockPath(b.Mnt, model, id)
				pin, _ := getxattr(p, "user.ucm.pinned")
				tiers, _ := getxattr(p, "user.ucm.tiers")
				if pin != "1" || !strings.Contains(tiers, "mem") {
					t.Errorf("B's pinned %s: pinned %q, tiers %q: out of B's memory", id[:8], pin, tiers)
				}
				if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, blk(id)) {
					t.Errorf("B's pinned %s: %v, %d bytes, not the block", id[:8], err, len(got))
				}
				if _, err := os.Stat(blockPath(share, model, id)); err == nil {
					onShare++
				}
			}
			t.Logf("%s: B's %d pinned blocks in its memory, %d of them still on the share", name, len(pinned), onShare)
		})
	}
}

// shareUse is the bytes of the block files under the share dir.
func shareUse(dir string) int64 {
	var n int64
	for _, p := range finalsUnder(dir) {
		if st, err := os.Stat(p); err == nil && strings.HasSuffix(p, ".bin") {
			n += st.Size()
		}
	}
	return n
}
