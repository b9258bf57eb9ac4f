package integration

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/internal/engineproto"
	"golang.org/x/sys/unix"
)

// TestSharedFSReadFigures measures, with UCMFS_SHAREDFS_FIGURES=1 (it is
// not part of make test), host B loading 256 blocks of 2 MiB that host A
// wrote: through B's ucmfs mount cold (a new daemon each round: the
// blocks come from the share) and warm (the same daemon again: from its
// memory), against the same files read directly on B's client mount of
// the filesystem; each buffered and with O_DIRECT (the engines' path).
// Rounds are interleaved; the load average is printed with each.
func TestSharedFSReadFigures(t *testing.T) {
	if os.Getenv("UCMFS_SHAREDFS_FIGURES") != "1" {
		t.Skip("set UCMFS_SHAREDFS_FIGURES=1 to measure")
	}
	const n, size, rounds = 256, 2 << 20, 3
	for _, name := range sharedFSNames {
		t.Run(name, func(t *testing.T) {
			fs := needSharedFS(t, name)
			hs := hostsOn(t, fs, hostsConfig{}, "--dirty-expire", "0")
			a, share := hs[0], hs[1].Tier
			if err := os.Mkdir(a.path("fig"), 0o755); err != nil {
				t.Fatal(err)
			}
			ids := testIDs("figures", n)
			for _, id := range ids {
				if err := writeVerdict(blockPath(a.Mnt, "fig", id), bigBlock(id, size)); err != nil {
					t.Fatal(err)
				}
			}
			flushAll(t, a)
			buf := engineproto.AlignedBuf(size + 8192)
			read := func(root string, direct bool) (time.Duration, error) {
				start := time.Now()
				for _, id := range ids {
					p := blockPath(root, "fig", id)
					if !direct {
						b, err := os.ReadFile(p)
						if err != nil || !bytes.Equal(b, bigBlock(id, size)) {
							return 0, fmt.Errorf("%s: %v (%d bytes)", p, err, len(b))
						}
						continue
					}
					fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECT, 0)
					if err != nil {
						return 0, err
					}
					got := 0
					for {
						m, err := unix.Read(fd, buf[got:])
						if err != nil || m == 0 {
							break
						}
						got += m
					}
					unix.Close(fd)
					if got != len(bigBlock(id, size)) {
						return 0, fmt.Errorf("%s: O_DIRECT read %d bytes", p, got)
					}
				}
				return time.Since(start), nil
			}
			mbps := func(d time.Duration) string { return fmt.Sprintf("%.0f MB/s", float64(n*size)/d.Seconds()/1e6) }
			for r := range rounds {
				for _, direct := range []bool{false, true} {
					how := map[bool]string{false: "buffered", true: "O_DIRECT"}[direct]
					dDirect, err := read(share, direct)
					if err != nil {
						t.Fatal(err)
					}
					b := mountUCM(t, mountOpts{Bare: true, Args: []string{"--memory", "1GiB", "--memory-dir", memDir,
						"--log-level", "warn", "--tier", "nfs:" + share, "--negative-ttl", sharedTTL.String()}})
					// B as it runs, not as it starts: its background
					// index of the share built first (a fresh daemon's
					// scan would compete with the reads it serves).
					indexed := time.Now()
					for tierBlocks(t, b, 1) < n {
						if time.Since(indexed) > 2*time.Minute {
							t.Fatalf("B indexed %d of the share's %d blocks in 2 min", tierBlocks(t, b, 1), n)
						}
						time.Sleep(20 * time.Millisecond)
					}
					t.Logf("%s round %d: B indexed the share's %d blocks %v after its mount", name, r+1, n, time.Since(indexed).Round(time.Millisecond))
					cold, err := read(b.Mnt, direct)
					if err != nil {
						t.Fatal(err)
					}
					warm, err := read(b.Mnt, direct)
					if err != nil {
						t.Fatal(err)
					}
					b.stop()
					load, _ := os.ReadFile("/proc/loadavg")
					t.Logf("%s round %d %s: direct on B's client %s; ucmfs on B cold %s (%.2fx), warm %s (%.2fx); load %s",
						name, r+1, how, mbps(dDirect), mbps(cold), dDirect.Seconds()/cold.Seconds(), mbps(warm),
						dDirect.Seconds()/warm.Seconds(), strings.TrimSpace(string(load)))
				}
			}
		})
	}
}
