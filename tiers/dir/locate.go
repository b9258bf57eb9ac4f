package dir

import (
	"path/filepath"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// TierFile is a file named by its path, placed in the tier directory that
// holds it (LocateTierFile): what `ucmfs inspect` needs to check one file
// of a tier the way Fsck checks it.
type TierFile struct {
	// Root is the tier directory, Rel the file's slash-separated path in it.
	Root, Rel string
	// Raw says the file is all payload: a File of a files model or a raw
	// block of the ucm-posix layout, not a UCMB block or sidecar.
	Raw bool
}

// maxLocateDepth bounds the parents LocateTierFile looks at.
const maxLocateDepth = 256

// LocateTierFile finds the tier directory among the parents of path (the
// nearest one holding LockFileName, which every daemon that used it made)
// and says whether the file is raw there: its model directory holds
// TreeMarkName, or the file is <id> in a raw shard directory. ok is false
// when no parent is a tier directory.
func LocateTierFile(path string) (TierFile, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return TierFile{}, false
	}
	var st unix.Stat_t
	for dir, i := filepath.Dir(abs), 0; i < maxLocateDepth; dir, i = filepath.Dir(dir), i+1 {
		if lstat(filepath.Join(dir, tier.LockFileName), &st) == nil {
			rel, err := filepath.Rel(dir, abs)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
				return TierFile{}, false
			}
			t := TierFile{Root: dir, Rel: filepath.ToSlash(rel)}
			parts := strings.Split(t.Rel, "/")
			switch {
			case len(parts) < 2:
			case isTreeDir(filepath.Join(dir, parts[0])):
				t.Raw = true
			case len(parts) == 3:
				_, isShard := format.ParseRawShard(parts[1])
				_, idErr := format.ParseID(parts[2])
				t.Raw = isShard && idErr == nil
			}
			return t, true
		}
		if dir == "/" || dir == "." {
			break
		}
	}
	return TierFile{}, false
}

// CheckKeptSum checks the raw file against the CRC-32C its tier keeps in
// a sum file (sums.go), for a tier whose filesystem keeps no xattrs:
// checked is false when there is no sum file for it (or no sum files at
// all), and the error is a format.FormatError when the bytes differ.
func (t TierFile) CheckKeptSum() (checked bool, err error) {
	root, err := rootfs.Open(t.Root, 0)
	if err != nil {
		return false, err
	}
	defer root.Close()
	var st unix.Stat_t
	if root.Lstat(sumsDirName, &st) != nil {
		return false, nil
	}
	if _, ok := fileSum(root, t.Rel); !ok {
		return false, nil
	}
	return true, checkRaw(root, t.Rel, true)
}

// isTreeDir reports whether the model directory at dir (a path an
// operator named) carries the tree mark.
func isTreeDir(dir string) bool {
	var st unix.Stat_t
	return lstat(filepath.Join(dir, tier.TreeMarkName), &st) == nil
}
