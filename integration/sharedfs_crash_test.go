package integration

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// filesUnder lists the files under dir whose names keep takes.
func filesUnder(dir string, keep func(name string) bool) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && keep(e.Name()) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// tempsUnder lists the tiers' temp files (.tmp-*) under dir.
func tempsUnder(dir string) []string {
	return filesUnder(dir, func(n string) bool { return strings.HasPrefix(n, ".tmp-") })
}

// finalsUnder lists the files under final names (no leading dot) under dir.
func finalsUnder(dir string) []string {
	return filesUnder(dir, func(n string) bool { return !strings.HasPrefix(n, ".") })
}

// TestSharedFSKilledMidWriteBack: host A's daemon is killed (-9) while it
// writes back to the share (a temp file of it is there), blocks of 4 MiB
// and files of a files model published on A one after another. Every
// file under a final name on the share reads whole, through another
// host's client; A's temp files are removed by the other hosts' daemons
// as they list the directories that hold them.
func TestSharedFSKilledMidWriteBack(t *testing.T) {
	for _, name := range sharedFSNames {
		t.Run(name, func(t *testing.T) {
			fsys := needSharedFS(t, name)
			// With KV events, each daemon checks every directory of the share
			// each second (else each minute): it is that check that finds
			// and removes the leftovers of a dead writer.
			hs := hostsOn(t, fsys, hostsConfig{events: true}, "--dirty-expire", "0")
			a, b := hs[0], hs[1]
			if err := os.Mkdir(a.path("kb"), 0o755); err != nil {
				t.Fatal(err)
			}
			filesModel(t, a, "kf")
			ids := testIDs("killed", 256)
			file := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("file %d;", i)), 512<<10/8) }
			share := b.Tier // the share through B's client
			stop := make(chan struct{})
			wrote := make(chan int, 1)
			go func() {
				i := 0
				defer func() { wrote <- i }()
				for ; i < len(ids); i++ {
					select {
					case <-stop:
						return
					default:
					}
					if writeVerdict(blockPath(a.Mnt, "kb", ids[i]), bigBlock(ids[i], 4<<20)) != nil ||
						tmpRename(a.path("kf", fmt.Sprintf(".w%d", i)), a.path("kf", fmt.Sprintf("f%d.bin", i)), file(i)) != nil {
						return
					}
				}
			}()
			until(t, "a temp file of A's write-back on the share, after some published", func() bool {
				return len(finalsUnder(share)) >= 8 && len(tempsUnder(share)) > 0
			})
			a.kill()
			close(stop)
			n := <-wrote
			left := tempsUnder(share)
			t.Logf("%s: A killed after %d publishes, with %d temp files on the share: %v", name, n, len(left), left)

			whole := 0
			for _, p := range finalsUnder(share) {
				var want []byte
				switch rel, _ := filepath.Rel(share, p); {
				case strings.HasPrefix(rel, "kb/"):
					want = bigBlock(strings.TrimSuffix(filepath.Base(p), ".bin"), 4<<20)
				case strings.HasPrefix(rel, "kf/"):
					var i int
					fmt.Sscanf(filepath.Base(p), "f%d.bin", &i)
					want = file(i)
				default:
					continue // the tiers' own records
				}
				if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s on the share under its final name: %v, %d bytes, not the %d published", p, err, len(got), len(want))
				}
				whole++
			}
			t.Logf("%s: %d files under final names on the share, each whole", name, whole)

			took := until(t, "A's temp files removed by the other hosts", func() bool { return len(tempsUnder(share)) == 0 })
			t.Logf("%s: A's temp files gone from the share %v after its death", name, took)
		})
	}
}
