package tier

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"golang.org/x/sys/unix"
)

// This file holds what both tiers use to publish files: temp names, key
// checks, error wrapping and the directories made for them.

// TmpPrefix starts the name of every temporary file of a tier. No valid
// model, shard or block name starts with '.', so temp files never look
// like published ones; in a files model's tree, where an engine may name
// its files anything, a temp file is one of IsTempName's form only.
const TmpPrefix = ".tmp-"

// RandomSuffix returns 16 hex characters for temp and directory names.
func RandomSuffix() string {
	return fmt.Sprintf("%016x", rand.Uint64())
}

// OSErr wraps a filesystem error with the operation. ENOSPC and EDQUOT
// also satisfy errors.Is(err, ErrFull); the errno stays reachable.
func OSErr(op string, err error) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("%s: %w: %w", op, ErrFull, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// NotFound turns ENOENT into ErrNotFound (keeping the errno reachable) and
// wraps other errors like OSErr.
func NotFound(op string, err error) error {
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%s: %w: %w", op, ErrNotFound, err)
	}
	return OSErr(op, err)
}

// CheckKey rejects keys whose model is not a valid model directory name,
// so no key can name a path outside the tier.
func CheckKey(key format.Key) error {
	if err := format.ValidateModel(key.Model); err != nil {
		return err
	}
	if !key.Kind.Valid() {
		return fmt.Errorf("%w: kind %d", format.ErrName, key.Kind)
	}
	if registry.Of(key).Tree() {
		if err := format.ValidateFilePath(key.Name); err != nil {
			return err
		}
		if key.ID != format.FileID(key.Name) {
			return fmt.Errorf("%w: %s: id is not the path's", format.ErrName, key)
		}
	}
	return nil
}

// FileStat returns the size and modification time of an open file.
func FileStat(f *os.File) (os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, OSErr("fstat", err)
	}
	return fi, nil
}

// DirCache remembers which directories beneath a root exist with their
// names durable (each one's parent fsynced since it was there), so
// publishing neither stats nor fsyncs them every time.
type DirCache struct {
	mu    sync.Mutex
	known map[string]struct{} // "<dir>/", and "<model>/"+TreeMarkName
}

// Ensure makes <model>/<shard> beneath r (for a File, its directory, and
// the model's tree mark) unless it is known, and makes the names of the
// directories durable. made reports that it was not known: a directory
// may have been made.
//
// A directory found there is not taken for durable: an earlier attempt
// whose fsync failed, a mkdir that made it without one (a model's), or a
// run before a crash may have left it, and a durable publish into it
// was lost at a power cut (the soak's "older", seed
// 1796638164599371838). So the parent of each directory not known is
// fsynced once per run, made or found: one fsync of a directory per
// shard (and one per model) the first time a run publishes into it.
func (c *DirCache) Ensure(r rootfs.FS, key format.Key) (made bool, err error) {
	rel := key.Model + "/" + key.ShardDir()
	if c.has(rel) {
		return false, nil
	}
	if err := c.mkdirAll(r, strings.TrimSuffix(rel, "/"), 0o755); err != nil {
		return true, OSErr("mkdir", err)
	}
	if registry.Of(key).Tree() {
		mark := key.Model + "/" + TreeMarkName
		if !c.has(mark) {
			if err := markTree(r, key.Model, true); err != nil {
				return true, err
			}
			c.add(mark)
		}
	}
	return true, nil
}

// has reports whether rel is known.
func (c *DirCache) has(rel string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.known[rel]
	return ok
}

// add makes rel known.
func (c *DirCache) add(rel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known == nil {
		c.known = make(map[string]struct{})
	}
	c.known[rel] = struct{}{}
}

// MkdirAllDurable makes rel and its missing parents beneath r, and
// fsyncs the parent of each directory, made or found, so that their
// names are durable: a file fsynced with its own directory is found
// after a power cut only if every directory above it is (the fsyncs of a
// file and of its directory make neither the directory's own name
// durable).
func MkdirAllDurable(r rootfs.FS, rel string, perm uint32) error {
	var c DirCache
	return c.mkdirAll(r, rel, perm)
}

// mkdirAll is MkdirAllDurable, skipping the directories known and
// making known those it made durable.
func (c *DirCache) mkdirAll(r rootfs.FS, rel string, perm uint32) error {
	if c.has(rel + "/") {
		return nil
	}
	parent := path.Dir(rel)
	if parent != "." {
		if err := c.mkdirAll(r, parent, perm); err != nil {
			return err
		}
	}
	var st unix.Stat_t
	var err error
	switch found := r.Lstat(rel, &st) == nil; {
	case found && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		// A link where a directory of the layout goes (planted on a
		// share, or where the tier wrote before): it is removed, the link
		// itself, and the directory made; it kept every write there
		// failing.
		if err := r.Unlink(rel); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
		err = r.Mkdir(rel, perm)
	case found && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		// There already (another host made it, or an earlier run): no
		// mkdir, which on a shared filesystem is one more namespace
		// operation racing the other hosts' (GlusterFS's distribute
		// layer answered ESTALE to a mkdir of a name two hosts made at
		// once).
	default:
		err = r.Mkdir(rel, perm)
	}
	if errors.Is(err, unix.ENOENT) && parent != "." {
		// A parent the cache knew went since (a directory moved or
		// removed): it is made again, and what the cache knew beneath
		// it forgotten.
		c.ForgetTree(parent)
		if err = c.mkdirAll(r, parent, perm); err != nil {
			return err
		}
		err = r.Mkdir(rel, perm)
	}
	if errors.Is(err, unix.EEXIST) {
		// Found, or another host's mkdir under way (rootfs.FoundDir).
		typ, err := rootfs.FoundDir(r, rel, perm)
		if err != nil {
			return err
		}
		if typ != unix.S_IFDIR {
			return r.MkdirAll(rel, perm) // refuses it: ENOTDIR, ELOOP for a link
		}
	} else if err != nil {
		return err
	}
	// Made, or found (another made it, perhaps without the fsync):
	// its name is durable once its parent is fsynced.
	if err := r.SyncDir(parent); err != nil {
		return err
	}
	c.add(rel + "/")
	return nil
}

// ForgetTree drops what is known of the directory rel and beneath it:
// it was removed or renamed, and a directory made again at its name is
// not durable until its parent is fsynced again.
func (c *DirCache) ForgetTree(rel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.known {
		if k == rel+"/" || strings.HasPrefix(k, rel+"/") {
			delete(c.known, k)
		}
	}
}

// Forget drops what is known about model ("" forgets everything).
func (c *DirCache) Forget(model string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for rel := range c.known {
		if model == "" || strings.HasPrefix(rel, model+"/") {
			delete(c.known, rel)
		}
	}
}

// SameFile reports whether the file rel beneath r still has the size and
// mtime of info; held is false when it is gone.
func SameFile(r rootfs.FS, rel string, info Info) (unchanged, held bool) {
	if info.MTime.IsZero() {
		return true, true // no time recorded: nothing to tell a change by
	}
	var st unix.Stat_t
	if err := r.Stat(rel, &st); err != nil {
		return false, false
	}
	return st.Size == info.Size && st.Mtim.Nano() == info.MTime.UnixNano(), true
}

// SyncDir fsyncs the directory rel beneath r so the entries in it are
// durable.
func SyncDir(r rootfs.FS, rel string) error {
	if err := r.SyncDir(rel); err != nil {
		return OSErr("fsync directory", err)
	}
	return nil
}

// LogEvery lets a log line through at most once a minute: what others put
// in a shared directory must not flood the log.
type LogEvery struct{ last atomic.Int64 }

// Allow reports whether a line may be logged at now, and if so counts it.
func (l *LogEvery) Allow(now time.Time) bool {
	last := l.last.Load()
	return now.UnixNano()-last >= int64(time.Minute) && l.last.CompareAndSwap(last, now.UnixNano())
}

// IsENOENT reports a missing file or directory.
func IsENOENT(err error) bool { return errors.Is(err, unix.ENOENT) }
