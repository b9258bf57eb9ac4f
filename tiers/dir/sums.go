package dir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// Checksums without xattrs.
//
// A tier keeps each file's payload CRC-32C in the crcXattr of the file.
// A filesystem that keeps no user xattrs (NFSv3, NFSv4 before 4.2, some
// 3FS and FUSE mounts) refuses it; a raw file there (a File, a ucm-posix
// raw block) would then carry no checksum at all, and the first host to
// read it would adopt whatever CRC it computed. On such a tier the CRC is
// kept in a sum file instead, under <root>/.ucmfs-sums/:
//
//	<root>/.ucmfs-sums/<hh>/<30 hex>   one per file, named by the
//	                                   SHA-256 of the file's key path
//
// holding one line, "ucmfs-sum1 <inode> <size> <crc>\n". The inode binds
// the sum to one version of the file: the sum is written (to a temporary
// name, then renamed) before the file is renamed into place, so a reader
// that finds a sum for another inode (a file rewritten by a host that
// kept no sum, or a sum whose file was not yet renamed) treats the CRC as
// unknown, as it does a file with no sum; a sum for this inode and size
// whose CRC differs from the bytes is a damaged file. The dot directory is
// skipped by every listing of the tier. A removal of a file removes its
// sum; a sum left behind (a crash between the two) is harmless, as its
// inode no longer matches, and is overwritten by the next publish of the
// same name.

// sumsDirName is the directory of sum files at a tier's root.
const sumsDirName = ".ucmfs-sums"

// sumMagic starts the line of a sum file.
const sumMagic = "ucmfs-sum1"

// sumRel is the path of key's sum file relative to the tier root.
func sumRel(key format.Key) string { return sumRelOf(key.Path()) }

// sumRelOf is the path of the sum file of the file at rel (a key's Path)
// relative to the tier root.
func sumRelOf(rel string) string {
	h := sha256.Sum256([]byte(rel))
	name := hex.EncodeToString(h[:16])
	return sumsDirName + "/" + name[:2] + "/" + name[2:]
}

// usesSums reports whether the tier keeps CRCs in sum files: its
// filesystem refused a CRC xattr, or an earlier run (or another host of a
// shared tier) left sums there.
func (t *Tier) usesSums() bool { return t.noXattr.Load() || t.sums.Load() }

// writeSum keeps crc as the checksum of f, the temporary file of key
// about to be renamed into place. sync makes the sum durable with it.
func (t *Tier) writeSum(key format.Key, f *os.File, crc uint32, sync bool) error {
	var st unix.Stat_t
	if err := tier.IgnoringEINTR(func() error { return unix.Fstat(int(f.Fd()), &st) }); err != nil {
		return err
	}
	rel := sumRel(key)
	dir := path.Dir(rel)
	tmp, tmpRel, err := t.fs.CreateTemp(dir, tier.TmpPrefix+"sum-", 0o600)
	if errors.Is(err, fs.ErrNotExist) { // the first sum of its directory
		if err = t.fs.MkdirAll(dir, 0o700); err == nil {
			tmp, tmpRel, err = t.fs.CreateTemp(dir, tier.TmpPrefix+"sum-", 0o600)
		}
	}
	if err != nil {
		return err
	}
	t.sums.Store(true)
	line := fmt.Appendf(nil, "%s %d %d %08x\n", sumMagic, st.Ino, st.Size, crc)
	_, err = tmp.Write(line)
	if err == nil && sync {
		err = t.fs.SyncFile(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = t.fs.Rename(tmpRel, rel, 0)
	}
	if err != nil {
		_ = t.fs.Unlink(tmpRel)
	}
	return err
}

// readSum returns the CRC the sum file of key keeps for the file at the
// key's path now: has is false when there is no sum, or it is for
// another version of the file (another inode or size).
func (t *Tier) readSum(key format.Key) (crc uint32, has bool, err error) {
	err = t.do("read sum", func() error {
		f, err := t.openBeneath(sumRel(key))
		if err != nil {
			if GoneErr(err) || tier.IsENOENT(err) {
				return nil
			}
			return err
		}
		var buf [80]byte
		n, _ := f.ReadAt(buf[:], 0)
		f.Close()
		ino, size, sum, ok := parseSum(buf[:n])
		if !ok {
			return nil
		}
		var st unix.Stat_t
		if err := t.fs.Lstat(key.Path(), &st); err != nil {
			return err
		}
		crc, has = sum, st.Ino == ino && st.Size == size
		return nil
	}, nil)
	return crc, has, err
}

// fileSum is readSum for fsck: the CRC the sum file beneath root keeps
// for the file at rel, if it is for that file's inode and size.
func fileSum(root rootfs.FS, rel string) (crc uint32, has bool) {
	// Not following a link, nor waiting on a FIFO planted at the name.
	f, err := root.OpenRegular(sumRelOf(rel))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var buf [80]byte
	n, _ := f.ReadAt(buf[:], 0)
	ino, size, crc, ok := parseSum(buf[:n])
	var st unix.Stat_t
	if !ok || root.Lstat(rel, &st) != nil || st.Ino != ino || st.Size != size {
		return 0, false
	}
	return crc, true
}

// parseSum parses the line of a sum file.
func parseSum(b []byte) (ino uint64, size int64, crc uint32, ok bool) {
	fields := bytes.Fields(b)
	if len(fields) != 4 || string(fields[0]) != sumMagic || len(b) == 0 || b[len(b)-1] != '\n' {
		return 0, 0, 0, false
	}
	ino, err1 := strconv.ParseUint(string(fields[1]), 10, 64)
	size, err2 := strconv.ParseInt(string(fields[2]), 10, 64)
	crc, ok = parseCRC(fields[3])
	return ino, size, crc, ok && err1 == nil && err2 == nil && size >= 0
}

// removeSum removes key's sum file, if the tier keeps sums. It runs
// within the operation that removed the file (under its timeout).
func (t *Tier) removeSum(key format.Key) {
	if t.usesSums() {
		_ = t.fs.Unlink(sumRel(key))
	}
}

// sweepSumTemps removes, in the background, the temporary sum files a
// crash left under .ucmfs-sums: all of them in a private tier (no one
// else writes there), the stale ones (staleTemp) in a shared one.
func (t *Tier) sweepSumTemps() {
	if !t.sums.Load() {
		return
	}
	shared := !t.share.inPlace()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		// Each directory's walk is one operation under the tier's
		// timeout: a stalled share holds up neither this nor Close.
		var dirs []string
		_ = t.do("sweep sums", func() (err error) {
			dirs, err = t.fs.ReadDirNames(sumsDirName)
			return err
		}, nil)
		for _, d := range dirs {
			dir := sumsDirName + "/" + d
			err := t.do("sweep sums", func() error {
				ents, err := t.fs.ReadDir(dir)
				for _, e := range ents {
					if !strings.HasPrefix(e.Name(), tier.TmpPrefix) {
						continue
					}
					if fi, err := e.Info(); err == nil && (!shared || staleTemp(e.Name(), fi.ModTime())) {
						_ = t.fs.Unlink(dir + "/" + e.Name())
					}
				}
				return err
			}, nil)
			if errors.Is(err, tier.ErrClosed) {
				return
			}
		}
	}()
}
