package dir

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/tiers/tier"
)

// flatDirs remembers, for a private directory tier, directories of files
// models that hold no subdirectory on it, so that the store's question
// "is this name a directory of the files model?" (Stack.TreeDirOnDisk),
// asked at every lookup of a name the model does not hold, is answered
// without a stat of the name on disk when the name's parent is such a
// directory: a flat model (SGLang's and LMCache's pages, every file at
// the root), or a leaf of a tree (vLLM's <hash[0:3]>/<hash[3:5]>_g<n>/).
// The stat was 13% of the daemon's time in a loop of misses.
//
// A directory holds no subdirectory when its link count is 2 on a
// filesystem known to count 2 plus the subdirectories (ext4, xfs, tmpfs:
// countsSubdirLinks; btrfs says 1, and a FUSE filesystem, a ucmfs mount
// among them, may say 2 of any directory) or when it does not exist. On
// a private tier only this daemon makes directories, in two places, both
// of which call madeDir after the mkdir: a File's directory made for a
// writer (Create, when DirCache.Ensure made it) and an engine's mkdir
// (Stack.MakeDir). madeDir marks every flat answer of the model learned
// from a stat that began before it stale (the tier's generation, read
// before each stat, against the model's last madeDir), in O(1). Answers
// that a directory has subdirectories stay: removals (a directory, a
// model) only make them conservative. A shared tier is never asked:
// another host may make a directory at any time.
type flatDirs struct {
	mu      sync.Mutex
	gen     uint64
	made    map[string]uint64      // model -> the generation of its last madeDir
	answers map[flatKey]flatAnswer // at most maxFlatAnswers
}

type flatKey struct{ model, dir string }

type flatAnswer struct {
	flat bool
	gen  uint64 // the generation read before the stat
}

// maxFlatAnswers bounds the answers kept (~100 bytes each); past it no
// more are learned and those directories are asked as before.
const maxFlatAnswers = 1 << 14

// known returns what was learned of dir of model and still holds.
func (f *flatDirs) known(model, dir string) (flat, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.answers[flatKey{model, dir}]
	switch {
	case !ok:
		return false, false
	case !a.flat:
		return false, true
	case a.gen >= f.made[model]:
		return true, true
	}
	return false, false // a directory was made in the model since: ask again
}

// generation is read before a stat.
func (f *flatDirs) generation() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen
}

// learn records what a stat of dir of model, begun at generation gen,
// said.
func (f *flatDirs) learn(model, dir string, gen uint64, flat bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := flatKey{model, dir}
	if _, ok := f.answers[k]; !ok && len(f.answers) >= maxFlatAnswers {
		return
	}
	if f.answers == nil {
		f.answers = make(map[flatKey]flatAnswer)
	}
	f.answers[k] = flatAnswer{flat: flat, gen: gen}
}

// madeDir is called after a directory was made under model's directory.
func (f *flatDirs) madeDir(model string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	if f.made == nil {
		f.made = make(map[string]uint64)
	}
	f.made[model] = f.gen
}

// NoSubdirs reports whether dir ("" the model's own) of model's tree on
// the tier is known to hold no subdirectory: never on a shared tier;
// learned with one stat of dir the first time, and again after a
// directory is made in the model.
func (t *Tier) NoSubdirs(model, dir string) bool {
	if t.Shared() || !t.subdirLinks {
		return false
	}
	if flat, ok := t.flat.known(model, dir); ok {
		return flat
	}
	gen := t.flat.generation()
	var st unix.Stat_t
	rel := model
	if dir != "" {
		rel += "/" + dir
	}
	err := t.fs.Stat(rel, &st)
	var flat bool
	switch {
	case errors.Is(err, unix.ENOENT):
		flat = true // no such directory on disk: nothing below it either
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		flat = st.Nlink == 2
	default:
		return false // not learned: asked again next time
	}
	t.flat.learn(model, dir, gen, flat)
	return flat
}

// countsSubdirLinks reports whether the filesystem of the directory fd
// counts subdirectories in its directories' link counts (2 plus them:
// ext2/3/4, xfs, tmpfs, by statfs's f_type), so that 2 says "no
// subdirectory". Other filesystems are read instead (false).
func countsSubdirLinks(fd int) bool {
	var st unix.Statfs_t
	if tier.IgnoringEINTR(func() error { return unix.Fstatfs(fd, &st) }) != nil {
		return false
	}
	switch st.Type {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}

// TreeSubdirs lists the subdirectories of dir on the tier.
func (t *Tier) TreeSubdirs(dir string) []string {
	var st unix.Stat_t
	if t.fs.Stat(dir, &st) != nil || st.Nlink == 2 && t.subdirLinks {
		// A directory's link count is 2 plus its subdirectories on
		// ext4, xfs and tmpfs: 2 says there are none, without reading
		// a flat directory of 10^5 files. (Other filesystems are read:
		// btrfs says 1, a FUSE filesystem may say 2 of any directory.)
		return nil
	}
	ents, err := t.fs.ReadDir(dir) // unsorted: the caller sorts; links left out
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
