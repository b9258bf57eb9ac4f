package bench

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// getfattrBlocks reads the model directory's user.ucm.blocks (the
// getxattr system call, as `getfattr -n` makes it) and returns its time
// and value.
func getfattrBlocks(t *testing.T, dir string) (float64, int64) {
	t.Helper()
	buf := make([]byte, 64)
	t0 := time.Now()
	n, err := unix.Getxattr(dir, "user.ucm.blocks", buf)
	took := since(t0)
	if err != nil {
		t.Fatalf("getxattr user.ucm.blocks %s: %v", dir, err)
	}
	v, err := strconv.ParseInt(string(buf[:n]), 10, 64)
	if err != nil {
		t.Fatalf("user.ucm.blocks %q: %v", buf[:n], err)
	}
	return took, v
}

// statRates times, from this process, the first stat of up to scaleStats
// blocks after the restart (a different slice of the blocks each round,
// so none was looked up before in this daemon's life... nor by the kernel
// since the restart) and as many stats of ids that do not exist (a new id
// each); it returns both rates per second.
func statRates(t *testing.T, d *daemon, rel []string, round int) (first, miss float64) {
	t.Helper()
	n := min(scaleStats, len(rel))
	// The shard directories first, untimed: what is timed is the blocks'
	// LOOKUPs, not the 256 directories'.
	for hh := 0; hh < 256; hh++ {
		os.Stat(d.path(filepath.Join(scaleModel, format.ShardName(byte(hh)))))
	}
	var st unix.Stat_t
	t0 := time.Now()
	for i := 0; i < n; i++ {
		p := rel[(round*n+i)%len(rel)]
		if err := unix.Stat(d.path(p), &st); err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
	}
	first = float64(n) / since(t0)
	paths := make([]string, n)
	for i := range paths {
		id := idAt(uint64(1)<<50 + uint64(round*n+i))
		paths[i] = d.path(format.Key{Model: scaleModel, ID: id, Kind: format.Block}.Path())
	}
	t0 = time.Now()
	for _, p := range paths {
		if err := unix.Stat(p, &st); !errors.Is(err, unix.ENOENT) {
			t.Fatalf("stat of a missing id %s: %v", p, err)
		}
	}
	miss = float64(n) / since(t0)
	return first, miss
}
