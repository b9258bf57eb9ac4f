package tiers

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// Handle is a published file opened for reading, and where it was found.
type Handle struct {
	File   *os.File // read-only; the caller closes it
	Tier   string   // name of the tier the descriptor reads from
	TierID TierID   // that tier's place in the stack
	Size   int64
	// Token names the tier file File reads, for Reuse (zero when the
	// descriptor cannot be reused: a private copy of a shared tier's file).
	Token Token
}

// BlockInfo describes a published key across the stack.
type BlockInfo struct {
	Info
	Holders []string // tiers holding the file, fastest first (shared: not to be changed)
	Dirty   bool     // in memory only, not yet on a persistent tier
	Pinned  bool     // kept in memory
}

// Has reports whether any tier holds k. A File being replaced is held
// (Stat says why).
func (s *Stack) Has(k format.Key) bool {
	if _, err := s.mem.Stat(k); err == nil {
		return true
	}
	if s.inDirs(k) {
		return true
	}
	return registry.Of(k).Replaces() && s.heldLocked(k)
}

// HasBlock reports whether any tier holds the block id of model. It is
// Has for batch lookups: it asks the tiers' indexes only, builds no error
// and allocates nothing. A shared directory tier is asked through Stat:
// its index revalidated, a block it lacks looked for on disk, because
// another daemon may have published or removed it (shared.go).
func (s *Stack) HasBlock(model string, id format.ID) bool {
	return s.HasKey(format.Key{Model: model, ID: id})
}

// HasKey is HasBlock for any key (a raw block's, a sidecar's).
func (s *Stack) HasKey(k format.Key) bool {
	s.revalidateShared(k)
	if s.mem.Index().Has(k) {
		return true
	}
	for _, d := range s.dirs {
		if d.Has(k) { // revalidated above
			return true
		}
	}
	return registry.Of(k).Replaces() && s.heldLocked(k) // being replaced (Stat)
}

// inDirs reports whether a directory tier holds k.
func (s *Stack) inDirs(k format.Key) bool {
	for _, d := range s.dirs {
		if s.skipShared(d, k) {
			continue
		}
		if _, err := d.Stat(k); err == nil {
			return true
		}
	}
	return false
}

// List calls fn once for every key of model ("" = all) held by any tier.
func (s *Stack) List(model string, fn func(format.Key) bool) {
	seen := make(map[format.Key]struct{})
	tiers := []Tier{s.mem}
	for _, d := range s.dirs {
		tiers = append(tiers, d)
	}
	for _, t := range tiers {
		for _, k := range listKeys(t, model) {
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			if !fn(k) {
				return
			}
		}
	}
}

// ShardKeys returns the keys of model whose id starts with the byte shard
// (the files of one <model>/<hh> directory), held by any tier, each once,
// in no particular order. It reads the tiers' indexes only: its cost is
// that of the shard, not of the model.
func (s *Stack) ShardKeys(model string, shard byte) []format.Key {
	keys, repeats := s.AppendShardKeys(model, shard, nil)
	if !repeats {
		return keys
	}
	// All keys are of model: equal id and kind is the same key.
	slices.SortFunc(keys, func(a, b format.Key) int {
		if c := bytes.Compare(a.ID[:], b.ID[:]); c != 0 {
			return c
		}
		return int(a.Kind) - int(b.Kind)
	})
	return slices.Compact(keys)
}

// AppendShardKeys appends to keys what ShardKeys returns, but with a key
// that several tiers hold appended once per tier; repeats says whether
// any may be. A caller that sorts the keys its own way (a files model's
// directory listing, by name) removes the repeats after its sort, and
// spares ShardKeys' sort by id of them all: a block written back is in
// two tiers, so a shard's listing is usually twice its files.
//
// A name being given a new version is listed all the same
// (stack_replacing.go).
func (s *Stack) AppendShardKeys(model string, shard byte, keys []format.Key) ([]format.Key, bool) {
	start := len(keys)
	for attempt := 1; ; attempt++ {
		begun, running := s.replacing.mark(shard)
		var repeats bool
		keys, repeats = s.appendShardKeys(model, shard, keys[:start])
		replaced, ok := s.replacing.since(shard, begun, running)
		if ok || attempt == listAttempts {
			return s.addReplaced(model, keys, start, replaced), repeats
		}
	}
}

// appendShardKeys is one reading of AppendShardKeys.
func (s *Stack) appendShardKeys(model string, shard byte, keys []format.Key) ([]format.Key, bool) {
	keys = s.mem.Index().ShardKeys(model, shard, keys)
	// A block is usually in several tiers, but a tier lists each key
	// once: only keys added after others may repeat them.
	repeats := false
	for _, d := range s.dirs {
		d.Revalidate(format.Key{Model: model, ID: format.ID{shard}})
		before := len(keys)
		keys = d.Index().ShardKeys(model, shard, keys)
		repeats = repeats || (before > 0 && len(keys) > before)
	}
	return keys, repeats
}

// listKeys collects the keys of t (of model, "" = all) before the caller
// looks at any of them, so no tier lock is held meanwhile.
func listKeys(t Tier, model string) []format.Key {
	var keys []format.Key
	t.List(model, func(in Info) bool { keys = append(keys, in.Key); return true })
	return keys
}

// Stat describes k: size, CRC, which tiers hold it, dirty and pinned.
// It reads no file, so it costs the same for any block size: the CRC is
// the one a tier already knows, and HasCRC is unset while none does (a
// block published without a CRC in its header, before its write-back
// copy computed one; a file found by a directory tier's rebuild whose
// xattr was not read yet). CRC gets it in every case.
func (s *Stack) Stat(k format.Key) (BlockInfo, error) {
	s.revalidateShared(k)
	bi, found := s.stat(k)
	if !found && registry.Of(k).Replaces() {
		// A File published over an earlier version (commitToMemory) is
		// removed and committed again under its stripe lock: a miss seen
		// outside the lock is asked again inside it, so that a File being
		// replaced is never reported absent (a lookup would answer ENOENT).
		bi, found = s.statLocked(k)
	}
	if !found {
		return bi, ErrNotFound
	}
	return bi, nil
}

// stat is Stat's look at the tiers' indexes.
func (s *Stack) stat(k format.Key) (bi BlockInfo, found bool) {
	var held uint64 // the tiers holding k: bit 0 memory, bit i+1 directory tier i
	if e, ok := s.mem.Index().Get(k); ok {
		in, pinned, dirty := tier.InfoOf(&e), e.Is(index.Pinned), e.Is(index.Dirty)
		bi.Info, found = in, true
		held |= 1
		if s.holderLists == nil {
			bi.Holders = append(bi.Holders, s.mem.Name())
		}
		bi.Dirty, bi.Pinned = dirty, pinned
	}
	for i, d := range s.dirs {
		in, ok := d.Lookup(k) // revalidated above; no error built for a miss
		if !ok {
			continue
		}
		if !found {
			bi.Info, found = in, true
			bi.Tier = TierID(i + 1)
		}
		if !bi.HasCRC && in.HasCRC {
			bi.CRC, bi.HasCRC = in.CRC, true
		}
		held |= 1 << min(i+1, 63)
		if s.holderLists == nil {
			bi.Holders = append(bi.Holders, d.Name())
		}
	}
	if s.holderLists != nil {
		bi.Holders = s.holderLists[held]
	}
	return bi, found
}

// maxListedDirs is the most directory tiers a stack makes holderLists
// for: 2^(1+maxListedDirs) lists.
const maxListedDirs = 6

// makeHolderLists returns every list BlockInfo.Holders may be, by the set
// of tiers holding a file (bit 0 the memory tier mem, bit i+1 directory
// tier i of dirs), or nil for a stack of more than maxListedDirs directory
// tiers. A stat shares them instead of building one each time (two
// allocations per GETATTR and lookup); each is capped at its length, so
// an append to one copies it.
func makeHolderLists(mem string, dirs []tier.Lower) [][]string {
	if len(dirs) > maxListedDirs {
		return nil
	}
	lists := make([][]string, 1<<(1+len(dirs)))
	for held := range lists {
		var l []string
		if held&1 != 0 {
			l = append(l, mem)
		}
		for i, d := range dirs {
			if held&(1<<(i+1)) != 0 {
				l = append(l, d.Name())
			}
		}
		lists[held] = l[:len(l):len(l)]
	}
	return lists
}

// CRC returns the payload CRC-32C of k (the bytes after the 64-byte
// header): the one a tier keeps; else, once, the one a directory tier's
// xattr holds; else, once, computed from the memory tier's copy and kept
// there. has is false when only a directory tier holds k and keeps no CRC
// for it (a filesystem without xattrs, a file copied in by hand);
// ErrNotFound when no tier holds k.
func (s *Stack) CRC(k format.Key) (crc uint32, has bool, err error) {
	bi, err := s.Stat(k)
	if err != nil {
		return 0, false, err
	}
	if bi.HasCRC {
		return bi.CRC, true, nil
	}
	for _, d := range s.dirs {
		if crc, has, err := d.CRC(k); err == nil && has {
			return crc, true, nil
		}
	}
	if len(bi.Holders) > 0 && bi.Holders[0] == s.mem.Name() {
		if crc, ok := s.memCRC(k); ok {
			return crc, true, nil
		}
	}
	return 0, false, nil
}

// memCRC computes the payload CRC-32C of k's copy in the memory tier and
// records it there. It reports false when the copy is gone or unreadable.
func (s *Stack) memCRC(k format.Key) (uint32, bool) {
	// The entry of the file opened next, unless it is replaced between:
	// then SetCRC records nothing.
	from := entryOf(s.mem, k)
	f, err := s.mem.OpenUntouched(k) // not mem.Open: no LRU use
	if err != nil {
		return 0, false
	}
	defer f.Close()
	_, crc, err := payloadCRC(f, k.Kind)
	if err != nil || s.mem.SetCRC(k, from, crc) != nil {
		return 0, false
	}
	if in, err := s.mem.Stat(k); err == nil && in.HasCRC {
		return in.CRC, true // a copy recorded it first; the same bytes
	}
	return crc, true
}

// ReadFile reads n bytes (all of it when n < 0) of k's file from the
// fastest tier holding it, with that tier's description of the file
// (Info.Tier says which). Unlike Open it neither promotes the file nor
// counts a hit, and it checks no CRC: it is for reading a header or a
// small file (a sidecar) where it lies. A file removed or moved between
// tiers meanwhile is looked for in the next tier. ErrNotFound when no
// tier holds k.
func (s *Stack) ReadFile(k format.Key, n int64) ([]byte, Info, error) {
	for id := Memory; int(id) <= len(s.dirs); id++ {
		t := s.tierAt(id)
		info, err := t.Stat(k)
		if err != nil {
			continue
		}
		info.Tier = id
		f, err := t.Open(k)
		if err != nil {
			continue // removed or moved meanwhile: the next tier may hold it
		}
		b, err := readPrefix(f, n)
		f.Close()
		if err != nil {
			return nil, info, fmt.Errorf("%s: reading the %s tier: %w", k, t.Name(), err)
		}
		return b, info, nil
	}
	return nil, Info{}, fmt.Errorf("%s: %w", k, ErrNotFound)
}

// readPrefix reads the first n bytes of f (all of f when n < 0).
func readPrefix(f *os.File, n int64) ([]byte, error) {
	if n < 0 {
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		n = fi.Size()
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, n), b); err != nil {
		return nil, fmt.Errorf("%d bytes: %w", n, err)
	}
	return b, nil
}
