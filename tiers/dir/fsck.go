package dir

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// Fsck checks a tier directory offline, by the rules the index rebuild
// walks it with (layoutWalk), and checks every file's content too: names
// and layout (docs/spec.md §2), headers and payload CRC-32C (§4-5), the
// CRC xattr when present, and that every sidecar has a valid block that
// fits it. '.' names below the root are leftovers of interrupted writes:
// reported, not errors. With Repair, bad entries are moved to
// <dir>/.quarantine/<same path> and leftovers removed; the tier's lock
// file is taken for the duration, so Repair fails with ErrLocked while a
// daemon holds the tier (an unshared kind: nvme). Fsck's error is for
// the directory itself; problems inside are in the report and findings.

// QuarantineDir is where Fsck with Repair moves bad entries, under the
// tier directory, keeping their relative path.
const QuarantineDir = ".quarantine"

// FsckOptions says how Fsck runs.
type FsckOptions struct {
	// Repair moves bad entries to QuarantineDir and removes leftovers.
	Repair bool
	// Finding, when set, gets every problem found, with what Repair did
	// about it, in walk order.
	Finding func(Finding)
	// Progress, when set, gets the number of entries checked so far,
	// after each entry.
	Progress func(entries int64)
}

// FindingKind is the kind of problem a Finding reports.
type FindingKind int

// The kinds of findings.
const (
	// FindingBad: the entry breaks a rule of the layout or the format.
	FindingBad FindingKind = iota
	// FindingLeftover: a temporary entry an interrupted write left.
	FindingLeftover
	// FindingError: the entry could not be checked (an I/O error).
	FindingError
)

// Finding is one problem Fsck found.
type Finding struct {
	Kind FindingKind
	Path string // relative to the directory, slash-separated
	Err  error  // the rule broken, or the I/O error
	// With Repair: where a bad entry was moved (relative), whether a
	// leftover was removed, or why neither could be done.
	Moved     string
	Removed   bool
	RepairErr error
}

// FsckReport counts what Fsck found.
type FsckReport struct {
	Entries       int // entries checked: files, and entries outside the layout
	Blocks, Reprs int // files checked, by kind
	OK            int // files that passed
	Bad           int // entries that broke a rule
	Errors        int // entries that could not be checked, or repaired
	Leftovers     int // temporary entries ('.' names)
	Moved         int // bad entries moved to QuarantineDir (Repair)
	Removed       int // leftovers removed (Repair)
}

// Fsck checks the tier directory dir; see the comment above QuarantineDir.
func Fsck(dir string, opts FsckOptions) (FsckReport, error) {
	root, err := rootfs.Open(dir, 0)
	if err != nil {
		return FsckReport{}, err
	}
	defer root.Close()
	f := &fscker{root: root, opts: opts, seen: map[string]bool{}}
	// A link the listing of the root or of a model leaves out is an
	// entry outside the layout: collected as the walk meets it, then
	// reported once, and with Repair moved aside (the link itself; what it
	// points at is never touched). Links met while repairing (a link at
	// .quarantine) are not collected again.
	var links []string
	root.OnLink = func(rel string) {
		if !f.repairing {
			links = append(links, rel)
		}
	}
	var st unix.Stat_t
	if root.Lstat(sumsDirName, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		f.sums = true
	}
	if opts.Repair {
		// The tier's own names at its root are never links: one there is
		// removed (the link itself), so the lock and the quarantine work.
		for _, name := range []string{tier.LockFileName, QuarantineDir} {
			if root.Lstat(name, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				f.entry()
				f.rep.Bad++
				fd := Finding{Kind: FindingBad, Path: name, Err: fmt.Errorf("%w: %s is a symbolic link (never followed)", format.ErrName, name)}
				if err := root.Unlink(name); err != nil {
					f.rep.Errors++
					fd.RepairErr = err
				} else {
					f.rep.Removed++
					fd.Removed = true
				}
				f.seen[name] = true
				f.report(fd)
			}
		}
		lock, err := tier.LockExclusive(root, tier.LockFileName)
		if errors.Is(err, tier.ErrLocked) {
			return f.rep, fmt.Errorf("%s is in use by a running daemon (it holds %s): %w", dir, tier.LockFileName, tier.ErrLocked)
		}
		if err != nil {
			return f.rep, err
		}
		defer lock.Close() // the file stays: a daemon would make it anyway
	}
	w := &layoutWalk{
		root:      root,
		workers:   1,
		readDir:   root.ReadDir,
		listShard: func(rel string) ([]shardEntry, error) { return listShard(root, rel) },
		bad:       func(rel string, why error) { f.entry(); f.bad(rel, why) },
		leftover:  func(rel string) { f.entry(); f.leftover(rel) },
		shard:     f.shard,
		dirError:  func(rel string, err error) bool { f.failure(rel, err); return false },
	}
	err = w.run()
	for _, rel := range links {
		if !f.seen[rel] {
			f.entry()
			f.bad(rel, fmt.Errorf("%w: %s is a symbolic link (never followed)", format.ErrName, rel))
		}
	}
	return f.rep, err
}

// fscker is the state of one Fsck.
type fscker struct {
	root rootfs.FS
	opts FsckOptions
	rep  FsckReport
	sums bool // the tier has sum files (sums.go)
	// seen holds the entries reported bad, each once; repairing is set
	// while a repair moves or removes an entry.
	seen      map[string]bool
	repairing bool
}

// entry counts one more entry checked.
func (f *fscker) entry() {
	f.rep.Entries++
	if f.opts.Progress != nil {
		f.opts.Progress(int64(f.rep.Entries))
	}
}

func (f *fscker) report(fd Finding) {
	if f.opts.Finding != nil {
		f.opts.Finding(fd)
	}
}

// shard checks the files of one shard directory: blocks first, then
// sidecars, each of which needs a valid block beside it.
func (f *fscker) shard(model, hh string, ents []shardEntry) {
	dir := strings.TrimSuffix(model+"/"+hh, "/")  // hh is "" at the root of a tree
	blocks := map[format.ID]*format.BlockHeader{} // nil value: present but bad
	var reprs []string
	for _, e := range ents {
		rel := dir + "/" + e.name
		switch {
		case e.class == leftoverEntry:
			f.entry()
			f.leftover(rel)
		case e.class == badEntry:
			f.entry()
			f.bad(rel, e.why)
		case registry.Of(format.Key{Kind: e.kind}).IsSidecar(format.Key{Kind: e.kind}):
			reprs = append(reprs, e.name)
		case registry.Of(format.Key{Kind: e.kind}).Headerless():
			f.rep.Blocks++
			f.verdict(rel, checkRaw(f.root, rel, f.sums))
		default:
			f.rep.Blocks++
			r, err := f.inspect(rel)
			if f.verdict(rel, err) {
				blocks[e.id] = &r.Block
			} else {
				blocks[e.id] = nil
			}
		}
	}
	for _, name := range reprs {
		rel := dir + "/" + name
		f.rep.Reprs++
		r, err := f.inspect(rel)
		if err == nil {
			err = sidecarBlock(r.Repr, blocks)
		}
		f.verdict(rel, err)
	}
}

// inspect checks the block or sidecar at rel (format.InspectOpen),
// opened beneath the root.
func (f *fscker) inspect(rel string) (format.FileReport, error) {
	file, err := f.root.OpenRegular(rel)
	if err != nil {
		if errors.Is(err, rootfs.ErrNotRegular) || errors.Is(err, unix.ELOOP) {
			err = fmt.Errorf("%w: %s is not a regular file", format.ErrName, rel)
		}
		return format.FileReport{Path: rel}, err
	}
	defer file.Close()
	return format.InspectOpen(file)
}

// sidecarBlock checks that a valid sidecar has a valid block that fits it.
func sidecarBlock(r format.ReprHeader, blocks map[format.ID]*format.BlockHeader) error {
	b, present := blocks[r.ID]
	switch {
	case !present:
		return &format.FormatError{Format: format.ReprMagic, Rule: format.RuleOrphan,
			Detail: fmt.Sprintf("no block %s.bin beside it", r.ID)}
	case b == nil:
		return &format.FormatError{Format: format.ReprMagic, Rule: format.RuleOrphan,
			Detail: fmt.Sprintf("its block %s.bin is bad", r.ID)}
	}
	return format.CheckReprForBlock(r, *b)
}

// verdict records the result of checking one file; true when it is good.
func (f *fscker) verdict(rel string, err error) bool {
	f.entry()
	switch {
	case err == nil:
		f.rep.OK++
		return true
	case errors.Is(err, format.ErrFormat), errors.Is(err, format.ErrName):
		f.bad(rel, err)
	default:
		f.failure(rel, err)
	}
	return false
}

// bad records an entry that breaks a rule and, with Repair, moves it to
// the quarantine directory.
func (f *fscker) bad(rel string, why error) {
	if f.seen[rel] {
		return
	}
	f.seen[rel] = true
	f.rep.Bad++
	fd := Finding{Kind: FindingBad, Path: rel, Err: why}
	if f.opts.Repair {
		f.repairing = true
		dst, err := f.quarantine(rel)
		f.repairing = false
		if err != nil {
			f.rep.Errors++
			fd.RepairErr = err
		} else {
			f.rep.Moved++
			fd.Moved = dst
		}
	}
	f.report(fd)
}

// quarantine moves root/rel to root/.quarantine/rel; see moveAside.
func (f *fscker) quarantine(rel string) (string, error) { return moveAside(f.root, rel) }

// moveAside moves rel to .quarantine/rel beneath root (with a numeric
// suffix when that name is taken) and returns the new relative path.
func moveAside(root rootfs.FS, rel string) (string, error) {
	dst := QuarantineDir + "/" + rel
	if err := root.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return "", err
	}
	var st unix.Stat_t
	for i := 1; ; i++ {
		if err := root.Lstat(dst, &st); errors.Is(err, fs.ErrNotExist) {
			break
		} else if err != nil {
			return "", err
		}
		dst = QuarantineDir + "/" + rel + "." + strconv.Itoa(i)
	}
	return dst, root.Rename(rel, dst, 0)
}

// leftover records a temporary entry and, with Repair, removes it.
func (f *fscker) leftover(rel string) {
	f.rep.Leftovers++
	fd := Finding{Kind: FindingLeftover, Path: rel}
	if f.opts.Repair {
		if err := f.root.RemoveAll(rel); err != nil {
			f.rep.Errors++
			fd.RepairErr = err
		} else {
			f.rep.Removed++
			fd.Removed = true
		}
	}
	f.report(fd)
}

// failure records an entry that could not be checked (an I/O error).
func (f *fscker) failure(rel string, err error) {
	f.rep.Errors++
	f.report(Finding{Kind: FindingError, Path: rel, Err: err})
}

// checkRaw checks a raw block file at rel beneath root (any size, empty
// too): when the tier keeps its CRC-32C (the crcXattr, else, with sums,
// its sum file, sums.go), the bytes match it.
func checkRaw(root rootfs.FS, rel string, sums bool) error {
	var buf [16]byte
	kept := crcXattr
	want, ok := uint32(0), false
	n, err := root.Getxattr(rel, crcXattr, buf[:])
	if err == nil {
		want, ok = parseCRC(buf[:n])
	} else if sums {
		want, ok = fileSum(root, rel)
		kept = "its sum file"
	}
	if !ok {
		return nil // no CRC kept: the size is the only rule
	}
	f, err := root.OpenRegular(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	bp := crcBufs.Get().(*[]byte)
	defer crcBufs.Put(bp)
	_, got, err := tier.PayloadCRC(f, format.RawKind(0), *bp)
	if err != nil {
		return err
	}
	if got != want {
		return &format.FormatError{Format: format.RawFormat, Rule: format.RuleCRC,
			Detail: fmt.Sprintf("CRC-32C is %08x, %s says %08x", got, kept, want)}
	}
	return nil
}

// crcBufs are the read buffers of the CRC checks (1 MiB, as a copy's
// between tiers).
var crcBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}
