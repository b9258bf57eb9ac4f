package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/hashdir"
)

// fscker walks one tier directory. Layout rules (docs/spec.md §2, §9):
//   - <root>/<model>/<hh>/<id>.bin and <id>.repr are the only regular
//     entries; anything else with a name not starting with '.' is bad.
//   - Names starting with '.' below the root are leftovers of interrupted
//     writes. At the root, '.' directories (.quarantine, private temporary
//     directories of a tier) are not entered, and lost+found is ignored.
type fscker struct {
	root   string
	repair bool
	w      io.Writer
	sum    fsckSummary
}

// tierLockName is the lock file a directory tier keeps at its root.
const tierLockName = ".ucmfs.lock"

// walkRoot checks every model directory of the root.
func (f *fscker) walkRoot() error {
	entries, err := os.ReadDir(f.root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".") && e.IsDir():
			// .quarantine and directories private to a tier.
		case name == tierLockName:
			// The lock file a running daemon holds on its tier.
		case strings.HasPrefix(name, "."):
			f.leftover(name)
		case name == "lost+found" && e.IsDir():
			// Created by mkfs at the root of a file system.
		case !e.IsDir():
			f.bad(name, fmt.Errorf("%w: %q is not a model directory", hashdir.ErrName, name))
		default:
			if err := hashdir.ValidateModel(name); err != nil {
				f.bad(name, err)
				continue
			}
			f.walkModel(name)
		}
	}
	return nil
}

// walkModel checks the shard directories of one model.
func (f *fscker) walkModel(model string) {
	entries, err := os.ReadDir(filepath.Join(f.root, model))
	if err != nil {
		f.failure(model, err)
		return
	}
	for _, e := range entries {
		rel := model + "/" + e.Name()
		switch _, isShard := hashdir.ParseShard(e.Name()); {
		case strings.HasPrefix(e.Name(), "."):
			f.leftover(rel)
		case !e.IsDir() || !isShard:
			f.bad(rel, fmt.Errorf("%w: %q is not a shard directory 00..ff", hashdir.ErrName, e.Name()))
		default:
			f.walkShard(model, e.Name())
		}
	}
}

// walkShard checks the files of one shard directory: blocks first, then
// sidecars, each of which needs a valid block beside it.
func (f *fscker) walkShard(model, hh string) {
	dir := model + "/" + hh
	entries, err := os.ReadDir(filepath.Join(f.root, dir))
	if err != nil {
		f.failure(dir, err)
		return
	}
	blocks := map[hashdir.ID]*hashdir.BlockHeader{} // nil value: present but bad
	var reprs []string
	for _, e := range entries {
		name, rel := e.Name(), dir+"/"+e.Name()
		if strings.HasPrefix(name, ".") {
			f.leftover(rel)
			continue
		}
		if !e.Type().IsRegular() {
			f.bad(rel, fmt.Errorf("%w: %s is not a regular file", hashdir.ErrName, name))
			continue
		}
		id, kind, err := hashdir.ParseFileName(hh, name)
		if err != nil {
			f.bad(rel, err)
			continue
		}
		if kind == hashdir.Repr {
			reprs = append(reprs, name)
			continue
		}
		f.sum.Blocks++
		r, err := hashdir.InspectFile(filepath.Join(f.root, rel))
		if f.verdict(rel, err) {
			blocks[id] = &r.Block
		} else {
			blocks[id] = nil
		}
	}
	for _, name := range reprs {
		rel := dir + "/" + name
		f.sum.Reprs++
		r, err := hashdir.InspectFile(filepath.Join(f.root, rel))
		if err == nil {
			err = sidecarBlock(r.Repr, blocks)
		}
		f.verdict(rel, err)
	}
}

// sidecarBlock checks that a valid sidecar has a valid block that fits it.
func sidecarBlock(r hashdir.ReprHeader, blocks map[hashdir.ID]*hashdir.BlockHeader) error {
	b, present := blocks[r.ID]
	switch {
	case !present:
		return &hashdir.FormatError{Format: hashdir.ReprMagic, Rule: hashdir.RuleOrphan,
			Detail: fmt.Sprintf("no block %s.bin beside it", r.ID)}
	case b == nil:
		return &hashdir.FormatError{Format: hashdir.ReprMagic, Rule: hashdir.RuleOrphan,
			Detail: fmt.Sprintf("its block %s.bin is bad", r.ID)}
	}
	return hashdir.CheckReprForBlock(r, *b)
}

// verdict records the result of checking one file; true when it is good.
func (f *fscker) verdict(rel string, err error) bool {
	switch {
	case err == nil:
		f.sum.OK++
		return true
	case errors.Is(err, hashdir.ErrFormat), errors.Is(err, hashdir.ErrName):
		f.bad(rel, err)
	default:
		f.failure(rel, err)
	}
	return false
}

// bad reports an entry that breaks a rule and, with --repair, moves it to
// the quarantine directory.
func (f *fscker) bad(rel string, reason error) {
	f.sum.Bad++
	if !f.repair {
		fmt.Fprintf(f.w, "bad %s: %v\n", rel, reason)
		return
	}
	dst, err := f.quarantine(rel)
	if err != nil {
		f.sum.Errors++
		fmt.Fprintf(f.w, "bad %s: %v; NOT moved: %v\n", rel, reason, err)
		return
	}
	f.sum.Moved++
	fmt.Fprintf(f.w, "bad %s: %v; moved to %s\n", rel, reason, dst)
}

// quarantine moves root/rel to root/.quarantine/rel (with a numeric suffix
// when that name is taken) and returns the new relative path.
func (f *fscker) quarantine(rel string) (string, error) {
	dst := filepath.ToSlash(filepath.Join(quarantineDir, rel))
	if err := os.MkdirAll(filepath.Join(f.root, filepath.Dir(dst)), 0o755); err != nil {
		return "", err
	}
	for i := 1; ; i++ {
		if _, err := os.Lstat(filepath.Join(f.root, dst)); errors.Is(err, fs.ErrNotExist) {
			break
		} else if err != nil {
			return "", err
		}
		dst = filepath.ToSlash(filepath.Join(quarantineDir, rel)) + "." + strconv.Itoa(i)
	}
	return dst, os.Rename(filepath.Join(f.root, rel), filepath.Join(f.root, dst))
}

// leftover reports a temporary entry and, with --repair, removes it.
func (f *fscker) leftover(rel string) {
	f.sum.Leftovers++
	if !f.repair {
		fmt.Fprintf(f.w, "leftover %s\n", rel)
		return
	}
	if err := os.RemoveAll(filepath.Join(f.root, rel)); err != nil {
		f.sum.Errors++
		fmt.Fprintf(f.w, "leftover %s: NOT removed: %v\n", rel, err)
		return
	}
	f.sum.Removed++
	fmt.Fprintf(f.w, "leftover %s: removed\n", rel)
}

// failure reports an entry that could not be checked (an I/O error).
func (f *fscker) failure(rel string, err error) {
	f.sum.Errors++
	fmt.Fprintf(f.w, "error %s: %v\n", rel, err)
}
