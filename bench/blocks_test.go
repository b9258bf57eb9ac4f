package bench

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// Block sizes: the 2 MiB of a large engine block (file size, header
// included) and the 4 KiB of the stat and scale sets.
const (
	bigBlock   = 2 << 20
	smallBlock = 4 << 10
)

// runSalt makes this run's ids differ from any earlier run's.
var runSalt = func() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}()

// idSeq numbers the ids of this run: every call of nextID is a new id.
var idSeq atomic.Uint64

// nextID returns an id never used before in this run. Its bytes are
// spread (splitmix64), so ids fall in all 256 shards.
func nextID() format.ID { return idAt(idSeq.Add(1)) }

// idAt is the n-th id of this run.
func idAt(n uint64) format.ID {
	var id format.ID
	binary.BigEndian.PutUint64(id[:8], mix(n^runSalt))
	binary.BigEndian.PutUint64(id[8:], mix(n+runSalt))
	return id
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// block is a reusable buffer holding one valid UCMB block; setID turns
// it into the block of another id (the payload stays, the header changes).
type block struct {
	buf []byte
	hdr format.BlockHeader
}

// newBlock makes a block file of size bytes: 1 layer, K and V, bfloat16,
// heads and head_dim not stated, no CRC in the header (the daemon
// computes its own), payload of pseudo-random bytes.
func newBlock(size int) *block {
	payload := make([]byte, size-format.HeaderSize)
	rand.Read(payload)
	h := format.BlockHeader{NumLayers: 1, BlockSize: 16, Dtype: format.BFloat16}
	return &block{buf: format.NewBlock(h, payload), hdr: h}
}

// setID rewrites the header for id and returns the block's bytes.
func (b *block) setID(id format.ID) []byte {
	b.hdr.ID = id
	b.hdr.PayloadLen = uint64(len(b.buf) - format.HeaderSize)
	b.hdr.Encode(b.buf[:format.HeaderSize])
	return b.buf
}

// blockPath is the path of model's block id under root (a mount point or
// a tier-layout directory).
func blockPath(root, model string, id format.ID) string {
	return root + "/" + format.Key{Model: model, ID: id, Kind: format.Block}.Path()
}

// makeModelDirs creates model's directory and, under a plain directory
// (not a mount, where shards always exist), its 256 shard directories.
func makeModelDirs(root, model string, shards bool) error {
	if err := os.MkdirAll(filepath.Join(root, model), 0o755); err != nil {
		return err
	}
	for i := 0; shards && i < 256; i++ {
		if err := os.MkdirAll(filepath.Join(root, model, format.ShardName(byte(i))), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// writeBlock is what an engine does to store a block: open with
// O_CREAT|O_EXCL|O_WRONLY, write it all, close. Through the mount, close
// publishes, and its error is the verdict.
func writeBlock(path string, data []byte) error { return writeBlockSync(path, data, false) }

// writeBlockSync is writeBlock; with sync set, the file is fdatasync'd
// before its close (what the disk sustains, page cache left out).
func writeBlockSync(path string, data []byte, sync bool) error {
	fd, err := retry(func() (int, error) {
		return unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	for off := 0; off < len(data); {
		n, err := retry(func() (int, error) { return unix.Write(fd, data[off:]) })
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("write %s: %w", path, err)
		}
		off += n
	}
	if sync {
		if err := unix.Fdatasync(fd); err != nil {
			unix.Close(fd)
			return fmt.Errorf("fdatasync %s: %w", path, err)
		}
	}
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// readBlock opens path, reads len(buf) bytes from it and closes it.
func readBlock(path string, buf []byte) error {
	fd, err := retry(func() (int, error) { return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	for off := 0; off < len(buf); {
		n, err := retry(func() (int, error) { return unix.Read(fd, buf[off:]) })
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if n == 0 {
			return fmt.Errorf("read %s: %d bytes, want %d", path, off, len(buf))
		}
		off += n
	}
	return nil
}

// retry calls fn again while it fails with EINTR.
func retry(fn func() (int, error)) (int, error) {
	for {
		n, err := fn()
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
}

// populate writes n valid blocks of size bytes, with ids idAt(first) ..
// idAt(first+n-1), straight into dir in the tier layout
// (<dir>/<model>/<hh>/<id>.bin), as a tier directory left by an earlier
// daemon holds them. It returns each block's path relative to dir.
func populate(dir, model string, first uint64, n, size int) ([]string, error) {
	if err := makeModelDirs(dir, model, true); err != nil {
		return nil, err
	}
	rel := make([]string, n)
	workers := max(2, runtime.NumCPU())
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			blk := newBlock(size)
			for i := w; i < n; i += workers {
				id := idAt(first + uint64(i))
				rel[i] = format.Key{Model: model, ID: id, Kind: format.Block}.Path()
				if err := writeBlock(dir+"/"+rel[i], blk.setID(id)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return rel, <-errs
}
