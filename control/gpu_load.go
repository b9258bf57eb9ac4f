package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/ucmfs/ucmfs/store"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/ucmfs/ucmfs/tiers"
)

// load <r> <model> <id>:<offset>[:<part>]...  ->  ok loaded=<n> bytes=<b>
//
// Each item copies part of a block into region r at offset: its payload
// (no part), the layers A to B of the payload ("A-B", both included, or
// one layer "A"), or the whole file with its header ("file"). Every block
// is first brought into the memory tier (promoted when it lives on a
// directory tier only) and pinned there until the copies are done; the
// bytes go to the device straight from the tier's locked (and, on a GPU,
// registered) mapping, all of them in one batch. A block that memory
// cannot take, or that the tier holds without a mapping, is read from
// its file instead. Every item is checked first, blocks found and ranges
// checked against the region: an unknown id (ENOENT) or a range past the
// region's end (EINVAL) fails the request before any byte is copied.

// gpuKeepBuffer is the largest read buffer a session keeps between
// requests.
const gpuKeepBuffer = 16 << 20

// partKind is what of a block an item loads.
type partKind uint8

const (
	partPayload partKind = iota // the payload
	partLayers                  // layers first..last of the payload
	partFile                    // the whole file, header and payload
)

// loadItem is one item of a load: what to copy where, then (once
// resolved) where the bytes are.
type loadItem struct {
	key         tiers.Key
	dst         int64 // offset in the region
	part        partKind
	first, last uint32 // partLayers

	src    []byte   // the bytes, inside a pinned mapping; nil: read them from f
	pinned bool     // the key is pinned for this item
	f      *os.File // the block's file, when src is nil
	off, n int64    // the bytes' range in the file
	level  int      // the tier they come from (0 memory)
}

// load copies the items of one request into a region.
func (g *gpuSession) load(ctx context.Context, t *tokens, out []byte) ([]byte, error) {
	start := time.Now()
	_, reg, err := g.region(t)
	if err != nil {
		return out, err
	}
	model, err := g.s.controlModel(t)
	if err != nil {
		return out, err
	}
	items, err := parseLoadItems(t, model, g.items[:0])
	defer g.release(items)
	if err != nil {
		return out, err
	}
	defer store.ObserveSince(g.s.Latency.Load, start)
	size := reg.r.Size()
	for i := range items {
		it := &items[i]
		if err := g.resolve(it); err != nil {
			if errors.Is(err, tiers.ErrNotFound) {
				return out, reqErr(tiers.ErrNotFound, "%s: not stored in %s (item %d)", it.key.ID, model, i+1)
			}
			return out, fmt.Errorf("item %d %s: %w", i+1, it.key.ID, err)
		}
		if it.dst > size || it.n > size-it.dst {
			return out, reqErr(ErrInvalid, "item %d %s: %d bytes at offset %d pass the end of region (%d bytes); nothing copied",
				i+1, it.key.ID, it.n, it.dst, size)
		}
	}
	total, err := g.copyIn(reg.r, items)
	if err != nil {
		return out, fmt.Errorf("load into %s: %w", reg.what, err)
	}
	c := &g.s.Counters
	c.GPULoads.Add(1)
	c.GPULoadBlocks.Add(int64(len(items)))
	c.GPULoadBytes.Add(total)
	for i := range items {
		it := &items[i]
		g.s.CountOut(it.level, it.n)
		g.s.Hit(it.key)
		if it.src == nil {
			c.GPULoadUnmapped.Add(1)
		}
	}
	out = append(out, "ok loaded="...)
	out = strconv.AppendInt(out, int64(len(items)), 10)
	out = append(out, " bytes="...)
	out = strconv.AppendInt(out, total, 10)
	return append(out, '\n'), nil
}

// parseLoadItems appends the items of a load request to items: at least
// one, at most MaxIDs, each <id>:<offset>[:<part>].
func parseLoadItems(t *tokens, model string, items []loadItem) ([]loadItem, error) {
	for tok := t.next(); tok != nil; tok = t.next() {
		if len(items) == MaxIDs {
			return items, reqErr(ErrTooMany, "more than %d blocks in one request", MaxIDs)
		}
		it, ok := parseLoadItem(tok)
		if !ok {
			return items, reqErr(ErrInvalid, "item %d %q: want <id>:<offset>, <id>:<offset>:<first>-<last> or <id>:<offset>:file",
				len(items)+1, clip(tok))
		}
		it.key.Model = model
		items = append(items, it)
	}
	if len(items) == 0 {
		return items, reqErr(ErrInvalid, "no blocks to load")
	}
	return items, nil
}

// parseLoadItem parses <id>:<offset>[:<part>].
func parseLoadItem(tok []byte) (loadItem, bool) {
	var it loadItem
	idTok, rest, _ := cutByte(tok, ':')
	offTok, partTok, hasPart := cutByte(rest, ':')
	id, ok := parseID(idTok)
	if !ok {
		return it, false
	}
	it.key.ID = id
	if it.dst, ok = parseCount(offTok); !ok {
		return it, false
	}
	switch {
	case !hasPart:
		it.part = partPayload
	case string(partTok) == "file":
		it.part = partFile
	default:
		a, b, isRange := cutByte(partTok, '-')
		if !isRange {
			b = a
		}
		first, err1 := strconv.ParseUint(string(a), 10, 32)
		last, err2 := strconv.ParseUint(string(b), 10, 32)
		if err1 != nil || err2 != nil || first > last {
			return it, false
		}
		it.part, it.first, it.last = partLayers, uint32(first), uint32(last)
	}
	return it, true
}

// resolve finds the bytes of an item: in the pinned mapping of the block
// in the memory tier, or else in its file (memory full, or not mapped).
func (g *gpuSession) resolve(it *loadItem) error {
	it.key = g.s.BlockKey(it.key.Model, it.key.ID)
	s, k := g.s, it.key
	err := s.AcquirePin(k)
	switch {
	case err == nil:
		if m := s.Stack().Mapping(k); m != nil {
			it.pinned = true
			if err := it.span(m[:min(len(m), hashdir.HeaderSize)], int64(len(m))); err != nil {
				return err
			}
			it.src, it.level = m[it.off:it.off+it.n], 0
			s.Stack().Touch(k)
			return nil
		}
		s.ReleasePin(k) // in memory but not mapped: read its file
	case errors.Is(err, tiers.ErrFull): // memory cannot take it: read it where it is
	default:
		return err
	}
	h, err := s.Stack().Open(k)
	if err != nil {
		return err
	}
	it.f, it.level = h.File, int(h.TierID)
	hdr := make([]byte, hashdir.HeaderSize)
	n, err := h.File.ReadAt(hdr, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return it.span(hdr[:n], h.Size)
}

// span sets the item's range in a block file of size bytes whose first
// bytes are hdr. A raw block is all payload and has no layers.
func (it *loadItem) span(hdr []byte, size int64) error {
	if it.key.Kind.Raw() {
		if it.part == partLayers {
			return reqErr(ErrInvalid, "layers %d-%d: a raw block has no layer layout", it.first, it.last)
		}
		it.off, it.n = 0, size
		return nil
	}
	h, err := hashdir.DecodeBlockHeader(hdr)
	if err != nil {
		return fmt.Errorf("stored block unreadable: %w: %w", tiers.ErrCorrupt, err)
	}
	payload := size - hashdir.HeaderSize
	switch it.part {
	case partFile:
		it.off, it.n = 0, size
	case partPayload:
		it.off, it.n = hashdir.HeaderSize, payload
	case partLayers:
		if it.last >= h.NumLayers {
			return reqErr(ErrInvalid, "layers %d-%d: the block has %d layers", it.first, it.last, h.NumLayers)
		}
		per := payload / int64(h.NumLayers)
		it.off = hashdir.HeaderSize + int64(it.first)*per
		it.n = int64(it.last-it.first+1) * per
	}
	return nil
}

// copyIn copies every item into the region, in order: consecutive items
// in mappings as one batch, the others through the session's buffer. It
// returns the bytes copied.
func (g *gpuSession) copyIn(r gpu.Region, items []loadItem) (int64, error) {
	ops := g.ops[:0]
	defer func() { clear(ops); g.ops = ops[:0] }()
	var total int64
	for i := range items {
		it := &items[i]
		total += it.n
		if it.src != nil {
			ops = append(ops, gpu.CopyOp{Off: it.dst, Host: it.src})
			continue
		}
		if len(ops) > 0 {
			if err := r.CopyInBatch(ops); err != nil {
				return 0, err
			}
			clear(ops)
			ops = ops[:0]
		}
		buf := g.buffer(it.n)
		if _, err := it.f.ReadAt(buf, it.off); err != nil {
			return 0, fmt.Errorf("%s: %w", it.key, err)
		}
		if err := r.CopyIn(it.dst, buf); err != nil {
			return 0, err
		}
	}
	if len(ops) > 0 {
		if err := r.CopyInBatch(ops); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// buffer returns the session's buffer, n bytes long.
func (g *gpuSession) buffer(n int64) []byte {
	if int64(cap(g.buf)) < n {
		g.buf = make([]byte, n)
	}
	return g.buf[:n]
}

// release unpins and closes what the items of a request hold, and keeps
// their slice for the next request (without references to mappings).
func (g *gpuSession) release(items []loadItem) {
	for i := range items {
		it := &items[i]
		if it.pinned {
			g.s.ReleasePin(it.key)
		}
		if it.f != nil {
			it.f.Close()
		}
	}
	clear(items)
	g.items = items[:0]
	if cap(g.buf) > gpuKeepBuffer {
		g.buf = nil
	}
}
