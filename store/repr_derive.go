package store

// Sidecars in the mount
//
// <id>.repr is either stored (an engine wrote it, or the mount derived it
// before) or derivable: the block is stored, has no sidecar, and its
// layout allows deriving one of the model's kind (reprSetting). A lookup
// of a derivable sidecar answers with the size sparse.DerivedHeader gives
// from the block's header alone; the first open (or attribute read)
// derives it from the block's keys and stores it in the tiers like a
// block (tiers.Stack.Put), so it is written back, evicted and removed
// with its block like any stored sidecar. Derivable sidecars are not
// listed by readdir until stored.
//
// Files are read here straight from the tiers (the fastest holding the
// file), not through tiers.Stack.Open: reading a block to derive its
// sidecar, or a sidecar to rank it, neither promotes it nor counts as a
// Hit. A block's payload CRC is checked against the one the stack keeps
// before anything is derived from it.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/sparse"
	"github.com/ucmfs/ucmfs/tiers"
)

// Memory of a derivation. A sidecar is derived from its whole block in
// memory: the block's bytes, then the sidecar's (up to twice the block's:
// merged:1 of a float16 block whose one tensor per layer is its keys). So
// a block is read whole, to derive from or to rank (topk reads a stored
// sidecar whole too), only up to the mount's MaxFileSize, the largest
// file a write through it may make: a larger one came from a host writing
// a shared tier, and is refused (ErrTooBig, EFBIG) without being read;
// and derivations in flight hold at most deriveMemory bytes together,
// three times a block's worth each (a derivation waits for room).

// deriveMemory is what derivations in flight may hold together: room for
// one of the largest block, or 1 GiB when more.
func deriveMemory(maxFile int64) int64 { return max(3*maxFile, 1<<30) }

// readWhole reads stored file k whole, refusing (ErrTooBig) one larger
// than MaxFileSize before reading it; it reads no more than the size it
// checked (a file replaced by a larger one meanwhile reads short, and
// fails its checks).
func (s *Store) readWhole(k format.Key) ([]byte, tiers.BlockInfo, error) {
	bi, err := s.stack.Stat(k)
	if err != nil {
		return nil, bi, err
	}
	if err := s.checkWhole(k, bi.Size); err != nil {
		return nil, bi, err
	}
	data, _, err := s.stack.ReadFile(k, bi.Size)
	return data, bi, err
}

// checkWhole refuses to read file k of size bytes whole past MaxFileSize.
func (s *Store) checkWhole(k format.Key, size int64) error {
	if size > s.opts.MaxFileSize {
		return fmt.Errorf("%s: %d bytes, more than the %d-byte max-file-size of this mount: not read whole: %w",
			k, size, s.opts.MaxFileSize, ErrTooBig)
	}
	return nil
}

// blockOf is the key of the block a sidecar key belongs to.
func blockOf(k format.Key) format.Key { return registry.Of(k).BlockOf(k) }

// sidecarOf is the key of a block's sidecar.
func sidecarOf(k format.Key) format.Key {
	side, _ := registry.Of(k).Sidecar(k)
	return side
}

// blockHeader reads and decodes the header of a stored block.
func (s *Store) blockHeader(k format.Key) (format.BlockHeader, tiers.Info, error) {
	b, info, err := s.stack.ReadFile(k, format.HeaderSize)
	if err != nil {
		return format.BlockHeader{}, info, err
	}
	h, err := format.DecodeBlockHeader(b)
	if err != nil {
		return h, info, fmt.Errorf("%s: %w: %w", k, tiers.ErrCorrupt, err)
	}
	return h, info, nil
}

// underivable marks a block whose layout does not allow derivation: the
// sidecar does not exist (ErrNoSidecar), and the refusal is logged.
func underivable(k format.Key, err error) error {
	return fmt.Errorf("%s: no sidecar stored, and none can be derived: %w (%w)", k, err, ErrNoSidecar)
}

// Derivable describes the sidecar key (Kind Repr) as the mount would
// derive it now: its size, and its block's publish time. ok is false,
// with a nil error, when derivation is off for the model or the block is
// not stored; an error means the block's layout does not allow it
// (underivable) or its header could not be read.
func (sc Sidecars) Derivable(key format.Key) (size int64, mtime time.Time, ok bool, err error) {
	set := sc.Setting(key.Model)
	if set.Off {
		return 0, time.Time{}, false, nil
	}
	bh, info, err := sc.s.blockHeader(blockOf(key))
	if errors.Is(err, tiers.ErrNotFound) {
		return 0, time.Time{}, false, nil
	}
	if err == nil {
		err = sc.s.checkWhole(blockOf(key), info.Size)
	}
	if err != nil {
		return 0, time.Time{}, false, err
	}
	rh, err := sparse.DerivedHeader(bh, set.Kind, set.Param)
	if err != nil {
		return 0, time.Time{}, false, underivable(key, err)
	}
	n, _ := rh.PayloadSize()
	return format.HeaderSize + int64(n), info.MTime, true, nil
}

// deriveBytes reads block (a block key), checks its payload CRC against
// the stack's, and derives its sidecar of kind and param in memory.
// A layout that does not allow it is underivable; a block past
// MaxFileSize is not read (ErrTooBig); the derivation waits for its room
// in deriveMem.
func (s *Store) deriveBytes(block format.Key, kind format.ReprKind, param uint32) ([]byte, error) {
	bi, err := s.stack.Stat(block)
	if err != nil {
		return nil, err
	}
	if err := s.checkWhole(block, bi.Size); err != nil {
		return nil, err
	}
	hold := min(3*bi.Size, deriveMemory(s.opts.MaxFileSize)) // the block, and a sidecar of up to twice it
	if err := s.deriveMem.Acquire(context.Background(), hold); err != nil {
		return nil, err
	}
	defer s.deriveMem.Release(hold)
	data, _, err := s.stack.ReadFile(block, bi.Size)
	if err != nil {
		return nil, err
	}
	if bi.HasCRC && len(data) >= format.HeaderSize {
		if got := format.CRC32C(data[format.HeaderSize:]); got != bi.CRC {
			return nil, fmt.Errorf("%s: payload CRC-32C %08x, the store has %08x: %w", block, got, bi.CRC, tiers.ErrCorrupt)
		}
	}
	repr, err := sparse.Derive(data, kind, param)
	if errors.Is(err, sparse.ErrUnsupported) {
		return nil, underivable(sidecarOf(block), err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: deriving a %s sidecar: %w", block, kind, err)
	}
	return repr, nil
}

// storeDerived publishes a derived sidecar file as key (Kind Repr). One
// already stored (by its engine or a concurrent derivation) is kept and
// is not an error. Derived sidecars are not held to the model's quota:
// they are a small fraction of their block, and a read must not fail for
// want of quota; they count in its use like any file.
func (s *Store) storeDerived(key format.Key, data []byte) error {
	info, err := s.stack.Put(key, data, false)
	if errors.Is(err, tiers.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	s.Counters.ReprDerived.Add(1)
	s.countIn(info.Tier, info.Size)
	return nil
}

// Derive makes sure key (Kind Repr) is stored: when it is not,
// it derives the model's kind from the block and stores it. Concurrent
// calls for one key derive once. It fails with tiers.ErrNotFound when
// derivation is off or the block is not stored, and with an underivable
// error when the block's layout does not allow it.
func (sc Sidecars) Derive(key format.Key) error {
	_, err, _ := sc.s.derives.Do(key.Path(), func() (any, error) {
		if sc.s.stack.Has(key) {
			return nil, nil
		}
		set := sc.Setting(key.Model)
		if set.Off {
			return nil, fmt.Errorf("%s: not stored, and repr_kind is none: %w", key, tiers.ErrNotFound)
		}
		data, err := sc.s.deriveBytes(blockOf(key), set.Kind, set.Param)
		if err != nil {
			return nil, err
		}
		return nil, sc.s.storeDerived(key, data)
	})
	return err
}

// checkSidecar checks a sidecar being published (pw, Kind Repr) against
// its block: same layers, heads and dim (format.CheckReprForBlock). A
// header that does not decode, or a block not stored, is left to the
// stack's own validation, which refuses them.
func (s *Store) checkSidecar(pw *tiers.PendingWrite) error {
	key := pw.Key()
	var b [format.HeaderSize]byte
	if _, err := pw.File().ReadAt(b[:], 0); err != nil {
		return nil
	}
	rh, err := format.DecodeReprHeader(b[:])
	if err != nil {
		return nil
	}
	bh, _, err := s.blockHeader(blockOf(key))
	if err != nil {
		return nil
	}
	if err := format.CheckReprForBlock(rh, bh); err != nil {
		return fmt.Errorf("%w: %s: %w", tiers.ErrInvalid, key, err)
	}
	return nil
}
