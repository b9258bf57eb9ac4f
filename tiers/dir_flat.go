package tiers

import (
	"errors"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// flatModels remembers, for a private directory tier, the models whose
// directory on it holds no subdirectory, so that the store's question
// "is this name a directory of the files model?" (Stack.TreeDirOnDisk),
// asked at every lookup of a name the model does not hold, is answered
// for a flat model (SGLang's and LMCache's pages, every file at the
// root) without a stat of the name on disk: 13% of the daemon's time in
// a loop of misses, ~10 µs a miss.
//
// A model's directory has no subdirectory when its link count is 2 (ext4,
// xfs and tmpfs count 2 plus the subdirectories; a filesystem that says
// 1, btrfs, is never taken for flat) or when it does not exist. On a
// private tier only this daemon makes directories, and it makes them in
// two places, both of which call madeDir after the mkdir: a File's
// directory when a writer is created (Create, dirCache.ensure) and an
// engine's mkdir (Stack.MakeDir). madeDir forgets every answer and moves
// the generation, so an answer learned from a stat that raced with a
// mkdir is not kept. A shared tier is never asked: another host may make
// a directory at any time.
type flatModels struct {
	mu   sync.Mutex
	gen  uint64
	flat map[string]bool // model -> its directory has no subdirectory
}

// known returns what was learned of model.
func (f *flatModels) known(model string) (flat, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	flat, ok = f.flat[model]
	return flat, ok
}

// generation is the count of madeDir calls, read before a stat.
func (f *flatModels) generation() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

// learn records what a stat begun at generation gen said of model; a
// flat answer only if no directory was made since.
func (f *flatModels) learn(model string, gen uint64, flat bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if flat && f.gen != gen {
		return
	}
	if f.flat == nil {
		f.flat = make(map[string]bool)
	}
	f.flat[model] = flat
}

// madeDir is called after a directory was made under model's directory:
// a flat answer is forgotten (a model known to have subdirectories keeps
// its answer: it is not asked again after every write into its tree).
func (f *flatModels) madeDir(model string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	if f.flat[model] {
		delete(f.flat, model)
	}
}

// noSubdirs reports whether model's directory on the tier is known to
// hold no subdirectory: never on a shared tier; learned with one stat of
// the model's directory the first time.
func (t *DirTier) noSubdirs(model string) bool {
	if t.Shared() {
		return false
	}
	if flat, ok := t.flat.known(model); ok {
		return flat
	}
	gen := t.flat.generation()
	var st unix.Stat_t
	err := unix.Stat(filepath.Join(t.root, model), &st)
	var flat bool
	switch {
	case errors.Is(err, unix.ENOENT):
		flat = true
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		flat = st.Nlink == 2
	default:
		return false // not learned: asked again next time
	}
	t.flat.learn(model, gen, flat)
	return flat
}
