package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/store"
)

// load <r> <model> <id>:<offset>[:<part>]...                    ->  ok loaded=<n> bytes=<b>
// load <k0>,<k1>,.../<v0>,<v1>,... <model> <id>:<offset>[:<layers>]...
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
//
// The second form scatters K and V: the target names one K region and
// one V region per layer of the blocks (an engine's per-layer K and V
// tensors, registered as regions). Each item's offset is its slot in
// every one of those tensors; layer l of the payload is split in halves,
// K first, and they go to k<l> and v<l> at that offset. A layer range
// loads only those layers; a whole file, an opaque block or a block of
// another number of layers is refused (EINVAL).
//
// Either way the whole request is one gpu.CopyInRegions: one submission
// per GPU (see gpu_staging.go for the bytes that are not in a mapping).

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
	key         format.Key
	dst         int64 // offset in the region
	part        partKind
	first, last uint32 // partLayers; for a K/V target, also the payload's layers
	per         int64  // bytes of one layer of the payload

	src    []byte   // the bytes, inside a pinned mapping; nil: read them from f
	pinned bool     // the key is pinned for this item
	f      *os.File // the block's file, when src is nil
	off, n int64    // the bytes' range in the file
	level  int      // the tier they come from (0 memory)
}

// load copies the items of one request into a region, or into K and V
// regions.
func (g *Session) load(ctx context.Context, t *line.Tokens, out []byte) ([]byte, error) {
	start := time.Now()
	tg, err := g.target(t)
	if err != nil {
		return out, err
	}
	model, err := g.e.model(ctx, t, store.AccessExec, "gpu load")
	if err != nil {
		return out, err
	}
	if err := line.CheckContent(ctx, model, g.e.store.Models().FilesPermit, "gpu load"); err != nil {
		return out, err
	}
	items, err := parseLoadItems(t, model, g.e.store.Models().LayoutOf(model).Tree(), g.items[:0])
	defer g.release(items)
	if err != nil {
		return out, err
	}
	defer store.ObserveSince(g.e.store.Latency.Load, start)
	for i := range items {
		it := &items[i]
		if err := g.resolve(it, len(tg.k)); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return out, line.Err(store.ErrNotFound, "%s: not stored in %s (item %d)", it.key.ID, model, i+1)
			}
			return out, fmt.Errorf("item %d %s: %w", i+1, it.key.ID, err)
		}
		if err := tg.fits(it); err != nil {
			return out, line.Err(line.ErrInvalid, "item %d %s: %v; nothing copied", i+1, it.key.ID, err)
		}
	}
	total, err := g.copyIn(tg, items)
	if err != nil {
		return out, fmt.Errorf("load into %s: %w", tg.what, err)
	}
	c := &g.e.store.Counters
	c.GPULoads.Add(1)
	c.GPULoadBlocks.Add(int64(len(items)))
	c.GPULoadBytes.Add(total)
	for i := range items {
		it := &items[i]
		g.e.store.CountOut(it.level, it.n)
		g.e.store.Hit(it.key)
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
// one, at most line.MaxIDs, each <id>:<offset>[:<part>], or in a files
// model (files set) <path>:<offset>[:file].
func parseLoadItems(t *line.Tokens, model string, files bool, items []loadItem) ([]loadItem, error) {
	for tok := t.Next(); tok != nil; tok = t.Next() {
		if len(items) == line.MaxIDs {
			return items, line.Err(line.ErrTooMany, "more than %d blocks in one request", line.MaxIDs)
		}
		if files {
			it, ok := parseFileItem(model, tok)
			if !ok {
				return items, line.Err(line.ErrInvalid, "item %d %q: want <path>:<offset> or <path>:<offset>:file", len(items)+1, line.Clip(tok))
			}
			items = append(items, it)
			continue
		}
		it, ok := parseLoadItem(tok)
		if !ok {
			return items, line.Err(line.ErrInvalid, "item %d %q: want <id>:<offset>, <id>:<offset>:<first>-<last> or <id>:<offset>:file",
				len(items)+1, line.Clip(tok))
		}
		it.key.Model = model
		items = append(items, it)
	}
	if len(items) == 0 {
		return items, line.Err(line.ErrInvalid, "no blocks to load")
	}
	return items, nil
}

// parseLoadItem parses <id>:<offset>[:<part>].
func parseLoadItem(tok []byte) (loadItem, bool) {
	var it loadItem
	idTok, rest, _ := line.Cut(tok, ':')
	offTok, partTok, hasPart := line.Cut(rest, ':')
	id, ok := line.ID(idTok)
	if !ok {
		return it, false
	}
	it.key.ID = id
	if it.dst, ok = line.Count(offTok); !ok {
		return it, false
	}
	switch {
	case !hasPart:
		it.part = partPayload
	case string(partTok) == "file":
		it.part = partFile
	default:
		a, b, isRange := line.Cut(partTok, '-')
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

// parseFileItem parses <path>:<offset>[:file] of a files model, from the
// right (a path may hold ':'); a File is all payload, so both load the
// whole file.
func parseFileItem(model string, tok []byte) (loadItem, bool) {
	var it loadItem
	s := strings.TrimSuffix(string(tok), ":file")
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return it, false
	}
	off, ok := line.Count([]byte(s[i+1:]))
	if !ok || format.ValidateFilePath(s[:i]) != nil {
		return it, false
	}
	it.key, it.dst, it.part = format.FileKey(model, s[:i]), off, partPayload
	return it, true
}

// resolve finds the bytes of an item: in the pinned mapping of the block
// in the memory tier, or else in its file (memory full, or not mapped).
// kv is the number of K (and V) regions of the target, 0 for one region.
func (g *Session) resolve(it *loadItem, kv int) error {
	if !registry.Of(it.key).Tree() { // a File's key is its path's already
		it.key = g.e.store.Models().BlockKey(it.key.Model, it.key.ID)
	}
	s, k := g.e, it.key
	err := s.store.AcquirePin(k)
	switch {
	case err == nil:
		if m := s.store.Tiers().Mapping(k); m != nil {
			it.pinned = true
			if err := it.span(m[:min(len(m), format.HeaderSize)], int64(len(m)), kv); err != nil {
				return err
			}
			it.src, it.level = m[it.off:it.off+it.n], 0
			s.store.Tiers().Touch(k)
			return nil
		}
		s.store.ReleasePin(k) // in memory but not mapped: read its file
	case errors.Is(err, store.ErrFull): // memory cannot take it: read it where it is
	default:
		return err
	}
	h, err := s.store.Tiers().Open(k)
	if err != nil {
		return err
	}
	it.f, it.level = h.File, int(h.TierID)
	hdr := make([]byte, format.HeaderSize)
	n, err := h.File.ReadAt(hdr, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return it.span(hdr[:n], h.Size, kv)
}

// span sets the item's range in a block file of size bytes whose first
// bytes are hdr; kv > 0 when its layers go to kv K and kv V regions. A
// raw block is all payload and has no layers (nor K/V split).
func (it *loadItem) span(hdr []byte, size int64, kv int) error {
	if it.key.Kind.Headerless() {
		if it.part == partLayers || kv > 0 {
			return line.Err(line.ErrInvalid, "a raw block has no layer layout to split")
		}
		it.off, it.n = 0, size
		return nil
	}
	h, err := format.DecodeBlockHeader(hdr)
	if err != nil {
		return fmt.Errorf("stored block unreadable: %w: %w", store.ErrCorrupt, err)
	}
	payload := size - format.HeaderSize
	if kv > 0 {
		if err := it.splitKV(h, payload, kv); err != nil {
			return err
		}
	}
	switch it.part {
	case partFile:
		it.off, it.n = 0, size
	case partPayload:
		it.off, it.n = format.HeaderSize, payload
	case partLayers:
		if h.Opaque() {
			return line.Err(line.ErrInvalid, "layers %d-%d: the block is opaque: it has no layer layout", it.first, it.last)
		}
		if it.last >= h.NumLayers {
			return line.Err(line.ErrInvalid, "layers %d-%d: the block has %d layers", it.first, it.last, h.NumLayers)
		}
		it.per = payload / int64(h.NumLayers)
		it.off = format.HeaderSize + int64(it.first)*it.per
		it.n = int64(it.last-it.first+1) * it.per
	}
	return nil
}

// splitKV checks that a block's layers can go to kv K and kv V regions,
// and makes a payload item load all of its layers.
func (it *loadItem) splitKV(h format.BlockHeader, payload int64, kv int) error {
	switch {
	case it.part == partFile:
		return line.Err(line.ErrInvalid, "a whole file has no place in K and V regions: load its payload or layers")
	case h.Opaque():
		return line.Err(line.ErrInvalid, "the block is opaque: it has no K/V layout to split")
	case int(h.NumLayers) != kv:
		return line.Err(line.ErrInvalid, "the block has %d layers, the request names %d K and %d V regions", h.NumLayers, kv, kv)
	case payload%(2*int64(kv)) != 0:
		return line.Err(line.ErrInvalid, "a payload of %d bytes does not split into %d layers of K and V halves", payload, kv)
	}
	if it.part == partPayload {
		it.part, it.first, it.last = partLayers, 0, h.NumLayers-1
	}
	return nil
}

// copyIn copies every item into the target, in order, as one
// gpu.CopyInRegions: items in mappings straight from them, the others
// read into the session's pinned staging buffer first (in rounds only
// when they pass stagingCap). It returns the bytes copied.
func (g *Session) copyIn(tg *loadTarget, items []loadItem) (int64, error) {
	ops := g.ops[:0]
	defer func() { clear(ops); g.ops = line.Keep(ops) }()
	var total, staged, largest int64
	for i := range items {
		total += items[i].n
		if items[i].src == nil {
			staged += items[i].n
			largest = max(largest, items[i].n)
		}
	}
	var buf []byte
	if staged > 0 {
		var err error
		if buf, err = g.stagingBuf(stagingSize(staged, largest)); err != nil {
			return 0, err
		}
	}
	used := int64(0)
	for i := range items {
		it := &items[i]
		if it.src != nil {
			ops = tg.ops(ops, it, it.src)
			continue
		}
		if used+it.n > int64(len(buf)) {
			if err := gpu.CopyInRegions(ops); err != nil {
				return 0, err
			}
			clear(ops)
			ops, used = ops[:0], 0
		}
		dst := buf[used : used+it.n]
		if _, err := it.f.ReadAt(dst, it.off); err != nil {
			return 0, fmt.Errorf("%s: %w", it.key, err)
		}
		ops = tg.ops(ops, it, dst)
		used += it.n
	}
	if err := gpu.CopyInRegions(ops); err != nil {
		return 0, err
	}
	return total, nil
}

// release unpins and closes what the items of a request hold, and keeps
// their slice for the next request (without references to mappings).
func (g *Session) release(items []loadItem) {
	for i := range items {
		it := &items[i]
		if it.pinned {
			g.e.store.ReleasePin(it.key)
		}
		if it.f != nil {
			it.f.Close()
		}
	}
	clear(items)
	g.items = line.Keep(items)
	g.trimStaging()
}
