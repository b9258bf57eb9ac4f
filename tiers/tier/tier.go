package tier

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
)

// Errors returned by tiers and the stack. Callers test them with errors.Is;
// the FUSE layer maps them to errno in one place.
var (
	// ErrNotFound: the tier (or no tier) holds the key.
	ErrNotFound = errors.New("not found")
	// ErrExist: the key is already published; the new copy was discarded.
	ErrExist = errors.New("already exists")
	// ErrFull: this tier has no room for the file right now.
	ErrFull = errors.New("tier full")
	// ErrNoSpace: no tier has room: every tier is full of pinned or dirty data.
	ErrNoSpace = errors.New("no space in any tier")
	// ErrCorrupt: a stored file failed its CRC-32C or header check.
	ErrCorrupt = errors.New("corrupt block")
	// ErrStalled: a directory did not answer within the tier's operation timeout.
	ErrStalled = errors.New("tier stalled")
	// ErrReadOnly: a directory tier's filesystem refused a write with
	// EROFS; the tier is Down until its probe can write again.
	ErrReadOnly = errors.New("tier is read-only")
	// ErrTierFailed: a directory tier's filesystem failed a write with EIO;
	// the tier is Down until its probe can write again.
	ErrTierFailed = errors.New("tier failed a write")
	// ErrClosed: the tier or stack was closed.
	ErrClosed = errors.New("closed")
	// ErrUnsynced: a new version of a name, asked durable, was renamed
	// over its old version's file, and the fsync of its directory failed
	// after: the name holds the new version, not durable (the old one's
	// file is gone; the error wraps the fsync's).
	ErrUnsynced = errors.New("published over the old version, not durable")
)

// ID is a tier's place in a stack: 0 for the memory tier, then 1, 2,
// ... for the directory tiers in the order the stack was built with,
// fastest first (tiers.TierID).
type ID int

// Info describes one published file in a tier.
type Info struct {
	Key   format.Key
	Size  int64     // bytes, header included
	MTime time.Time // publish time
	// CRC is the CRC-32C of the payload (the bytes after the 64-byte
	// header) when HasCRC is set.
	CRC    uint32
	HasCRC bool
	// Tier is the tier this description comes from, in the results of a
	// tiers.Stack: for Publish and Put the tier that took the file, for Stat
	// the fastest one holding it, for ReadFile the one read. A tier's
	// own methods leave it zero.
	Tier ID
}

// Usage is a tier's capacity and use, in bytes of file content.
type Usage struct {
	Capacity int64 // the most the tier may hold
	Used     int64 // bytes of published files
	Charged  int64 // what they take of the capacity: Used, or for the memory tier each file rounded up to whole pages
	Files    int64 // number of published files
	MaxFiles int64 // the most files it may hold (0: no bound; DirConfig.MaxFiles)
	Pinned   int64 // what pinned files take of the capacity (the memory tier)
}

// DefaultMaxFiles is the most files a tier holds unless configured
// (MemConfig.MaxFiles, DirConfig.MaxFiles). Each file is an index entry in
// the daemon's memory (about 150 bytes, plus its path in a files model),
// whatever its size: bytes alone would let a tier the size of a disk, or a
// user filling one with tiny files, take the daemon's memory without
// bound (a 4 TB tier of 4 KiB files: 10^9 entries). 2^24 files of 2 MiB
// are 32 TiB, more than a tier holds of KV blocks; 2^24 entries are some
// 2.5 GB of the daemon's memory (4 GB with 100-byte paths). A tier at the
// bound evicts its least recently used file for a new one, as a full one.
const DefaultMaxFiles = 1 << 24

// MaxFiles is the bound a configured MaxFiles gives (0: none).
func MaxFiles(n int64) int64 {
	switch {
	case n == 0:
		return DefaultMaxFiles
	case n < 0:
		return 0
	}
	return n
}

// NoRoom is the ErrFull of an index that did not reserve size bytes:
// what it lacks, bytes or a file.
func NoRoom(x *index.Index, size int64) error {
	if u := x.Usage(); u.MaxFiles > 0 && u.Files >= u.MaxFiles {
		return fmt.Errorf("the tier holds its most files (%d): %w", u.MaxFiles, ErrFull)
	}
	return fmt.Errorf("needs %d bytes, %d free: %w", size, x.Room(), ErrFull)
}

// CommitOptions says how a Writer publishes its file.
type CommitOptions struct {
	// Sync makes the file and its directory entry durable before Commit
	// returns (fsync of the file and of its parent directory).
	Sync bool
	// CRC, when HasCRC is set, is the payload CRC-32C the caller computed;
	// the tier keeps it with the file.
	CRC    uint32
	HasCRC bool
	// HeaderCRC, when HasHeaderCRC is set, is the CRC-32C of the file's
	// 64 header bytes; a directory tier keeps it in format.HeaderCRCXattr.
	HeaderCRC    uint32
	HasHeaderCRC bool
	// MTime is the block's publish time, kept as the file's mtime so it
	// stays the same across copies between tiers. Zero means now.
	MTime time.Time
	// From is, for a copy between tiers (the stack's copyOut), the source tier's
	// index entry the bytes were read from: the copy commits only while
	// it is still the source's entry of the key (a File replaced
	// meanwhile has a new one).
	From *index.Entry
}

// PublishTime is the mtime a commit gives its file.
func (o CommitOptions) PublishTime() time.Time {
	if o.MTime.IsZero() {
		return time.Now()
	}
	return o.MTime
}

// Tier is one level of block storage. Published files are immutable: they
// are created once through a Writer and later only read or removed.
// Implementations are safe for concurrent use.
type Tier interface {
	// Name is the tier's kind as users see it: "mem", "nvme", "nfs", "ds3fs".
	Name() string
	// Persistent reports whether files survive a restart of the daemon.
	Persistent() bool
	// Create starts a new file for key in a private temporary place. Its
	// bytes become visible under key only when Commit succeeds.
	Create(key format.Key) (Writer, error)
	// Open opens a published file read-only. The caller closes it. A file
	// removed while open stays readable through the open descriptor.
	Open(key format.Key) (*os.File, error)
	// Stat describes a published file, or returns ErrNotFound.
	Stat(key format.Key) (Info, error)
	// Remove deletes a published file (ErrNotFound if absent).
	Remove(key format.Key) error
	// List calls fn for every published file of model (all models when
	// model is ""), in no particular order, until fn returns false.
	List(model string, fn func(Info) bool)
	// Usage reports capacity and use.
	Usage() Usage
	// Close releases the tier's resources. Published files of a
	// persistent tier stay on disk.
	Close() error
}

// Writer is a file being written into a tier. Exactly one of Commit or
// Abort must be called.
type Writer interface {
	// File is the temporary file: its fd can be written with pwrite or
	// handed to the kernel (FUSE passthrough). Do not close it.
	File() *os.File
	// Write appends p at the end of what was written through Write.
	Write(p []byte) (int, error)
	// Commit publishes the file under its key. If the key is already
	// published it returns ErrExist and discards this copy. If the tier has
	// no room it returns ErrFull and the Writer stays usable (Commit may be
	// retried, or Abort called).
	Commit(opts CommitOptions) (Info, error)
	// Abort discards the file.
	Abort()
}
