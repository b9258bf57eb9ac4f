package transfer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/store"
)

// dump <r> <model> <id>:<offset>:<length>...  ->  ok dumped=<n> existing=<m>
//
// Each item names a complete block file (64-byte header and payload)
// that lies at offset in region r, length bytes long, and publishes it as
// <model>/<hh>/<id>.bin exactly as a close() of a written file does: the
// size limit, the model's quota, then validation (id, header, CRC) and
// publish. An id already stored counts in existing (its bytes are not
// read). The request runs in three steps, so that a bad item leaves
// nothing published: every item's range is checked against the region;
// then every new block is copied out into a pending file and validated;
// then they are published, in order. Only a failure of that last step
// (no room, a quota) leaves the items before it published; its message
// says how many. The new blocks are copied out with one batch into the
// session's pinned staging buffer (gpu_staging.go; in rounds only past
// stagingCap), then validated and written to their pending files.

// dumpItem is one item of a dump.
type dumpItem struct {
	key    format.Key
	off, n int64
	pw     *store.DraftFile // the block being written, until published
}

// dump publishes the items of one request from a region.
func (g *Session) dump(ctx context.Context, t *line.Tokens, out []byte) ([]byte, error) {
	start := time.Now()
	_, reg, err := g.region(t)
	if err != nil {
		return out, err
	}
	model, err := g.e.model(ctx, t, store.AccessWrite|store.AccessExec, "gpu dump")
	if err != nil {
		return out, err
	}
	items, err := g.parseDumpItems(t, model, reg.r.Size())
	defer g.abortDumps(items)
	if err != nil {
		return out, err
	}
	if g.e.store.Stopped() {
		return out, fmt.Errorf("dump: shutting down: %w", store.ErrStopped)
	}
	defer store.ObserveSince(g.e.store.Latency.Dump, start)
	existing := 0
	for i := range items {
		it := &items[i]
		pw, err := g.e.store.Tiers().Create(it.key)
		if errors.Is(err, store.ErrExist) {
			existing++
			continue
		}
		if err != nil {
			return out, fmt.Errorf("item %d %s: %w", i+1, it.key.ID, err)
		}
		it.pw = pw
		g.e.store.Writes().Started(it.key)
	}
	if err := g.stageAll(reg, items); err != nil {
		return out, err
	}
	dumped, bytes := 0, int64(0)
	for i := range items {
		it := &items[i]
		if it.pw == nil {
			continue
		}
		pw := it.pw
		it.pw = nil
		_, err := g.e.store.Writes().Publish(pw, it.n, false)
		g.e.store.Writes().Ended(it.key)
		switch {
		case errors.Is(err, store.ErrExist):
			existing++
		case err != nil:
			return out, fmt.Errorf("item %d %s: %w (%d blocks of this request published before it)", i+1, it.key.ID, err, dumped)
		default:
			dumped++
			bytes += it.n
			g.e.store.NotifyPublished(it.key)
		}
	}
	c := &g.e.store.Counters
	c.GPUDumps.Add(1)
	c.GPUDumpBlocks.Add(int64(dumped))
	c.GPUDumpExisting.Add(int64(existing))
	c.GPUDumpBytes.Add(bytes)
	out = append(out, "ok dumped="...)
	out = strconv.AppendInt(out, int64(dumped), 10)
	out = append(out, " existing="...)
	out = strconv.AppendInt(out, int64(existing), 10)
	return append(out, '\n'), nil
}

// parseDumpItems reads the items of a dump request, <id>:<offset>:<length>
// each (a files model: <path>:<offset>:<length>), and checks every range against the region (EINVAL), every length
// against the size limit (EFBIG), and their total against the memory
// tier, which stages them (E2BIG).
func (g *Session) parseDumpItems(t *line.Tokens, model string, size int64) ([]dumpItem, error) {
	var items []dumpItem
	var total int64
	room := g.e.store.MemoryCapacity()
	layout := g.e.store.Models().LayoutOf(model)
	raw := layout.Headerless() // a raw block or a File is its payload: no header to hold
	files := layout.Tree()     // a tree of Files names its items by path
	for tok := t.Next(); tok != nil; tok = t.Next() {
		i := len(items) + 1
		if i > line.MaxIDs {
			return items, line.Err(line.ErrTooMany, "more than %d blocks in one request", line.MaxIDs)
		}
		key, off, n, ok := parseDumpItem(model, tok, files, g.e.store.Models().BlockKey)
		id := key.ID
		switch {
		case !ok && files:
			return items, line.Err(line.ErrInvalid, "item %d %q: want <path>:<offset>:<length>", i, line.Clip(tok))
		case !ok:
			return items, line.Err(line.ErrInvalid, "item %d %q: want <id>:<offset>:<length>", i, line.Clip(tok))
		case n < format.HeaderSize && !raw:
			return items, line.Err(line.ErrInvalid, "item %d %s: %d bytes cannot hold a block (at least the %d-byte header)", i, id, n, format.HeaderSize)
		case n > g.e.store.MaxFileSize():
			return items, line.Err(store.ErrTooBig, "item %d %s: %d bytes pass the %d-byte limit", i, id, n, g.e.store.MaxFileSize())
		case off > size || n > size-off:
			return items, line.Err(line.ErrInvalid, "item %d %s: %d bytes at offset %d pass the end of region (%d bytes); nothing published", i, id, n, off, size)
		}
		if total += n; total > room {
			return items, line.Err(line.ErrTooMany, "the blocks of this request take more than the memory tier's %d bytes: split it", room)
		}
		items = append(items, dumpItem{key: key, off: off, n: n})
	}
	if len(items) == 0 {
		return items, line.Err(line.ErrInvalid, "no blocks to dump")
	}
	return items, nil
}

// stageAll copies the new items' bytes out of the region into the
// staging buffer, one batch per round, then validates each as a block
// named by its id and writes it to its pending file.
func (g *Session) stageAll(reg *gpuRegion, items []dumpItem) error {
	var total, largest int64
	for i := range items {
		if items[i].pw != nil {
			total += items[i].n
			largest = max(largest, items[i].n)
		}
	}
	if total == 0 {
		return nil
	}
	buf, err := g.stagingBuf(stagingSize(total, largest))
	if err != nil {
		return err
	}
	var ops []gpu.CopyOp
	var round []int // the items of ops
	flush := func() error {
		if err := reg.r.CopyOutBatch(ops); err != nil {
			return fmt.Errorf("dump from %s: %w; nothing published", reg.what, err)
		}
		for j, i := range round {
			if err := items[i].write(ops[j].Host); err != nil {
				return fmt.Errorf("item %d %s: %w; nothing published", i+1, items[i].key.ID, err)
			}
		}
		ops, round = ops[:0], round[:0]
		return nil
	}
	used := int64(0)
	for i := range items {
		it := &items[i]
		if it.pw == nil {
			continue
		}
		if used+it.n > int64(len(buf)) {
			if err := flush(); err != nil {
				return err
			}
			used = 0
		}
		ops = append(ops, gpu.CopyOp{Off: it.off, Host: buf[used : used+it.n]})
		round = append(round, i)
		used += it.n
	}
	return flush()
}

// write validates a dumped block's bytes as a block named by the item's
// id (a raw block or a File: no rule) and writes them to its pending file.
func (it *dumpItem) write(b []byte) error {
	var err error
	if it.key.Kind.Headerless() {
		// a raw block or a File: any bytes (UCM takes an empty file as a block)
	} else if h, derr := format.DecodeBlockHeader(b); derr != nil {
		err = derr
	} else {
		err = format.ValidateBlock(h, it.key.ID, it.n, func() (uint32, error) {
			return format.CRC32C(b[format.HeaderSize:]), nil
		})
	}
	if err != nil {
		return fmt.Errorf("%w: %w", store.ErrInvalidBlock, err)
	}
	if _, err := it.pw.File().WriteAt(b, 0); err != nil {
		return fmt.Errorf("staging the block: %w", err)
	}
	return nil
}

// abortDumps discards the pending files of a dump that were not
// published, and drops a large staging buffer.
func (g *Session) abortDumps(items []dumpItem) {
	for i := range items {
		if it := &items[i]; it.pw != nil {
			g.e.store.Tiers().Abort(it.pw)
			g.e.store.Writes().Ended(it.key)
			it.pw = nil
		}
	}
	g.trimStaging()
}

// parseDumpItem parses <id>:<offset>:<length>, the id's key by blockKey,
// or in a files model <path>:<offset>:<length> from the right (a path may
// hold ':').
func parseDumpItem(model string, tok []byte, files bool, blockKey func(string, format.ID) format.Key) (key format.Key, off, n int64, ok bool) {
	if files {
		s := string(tok)
		j := strings.LastIndexByte(s, ':')
		if j < 0 {
			return key, 0, 0, false
		}
		i := strings.LastIndexByte(s[:j], ':')
		if i < 0 || format.ValidateFilePath(s[:i]) != nil {
			return key, 0, 0, false
		}
		off, ok1 := line.Count([]byte(s[i+1 : j]))
		n, ok2 := line.Count([]byte(s[j+1:]))
		return format.FileKey(model, s[:i]), off, n, ok1 && ok2
	}
	idTok, rest, _ := line.Cut(tok, ':')
	offTok, lenTok, _ := line.Cut(rest, ':')
	id, ok1 := line.ID(idTok)
	off, ok2 := line.Count(offTok)
	n, ok3 := line.Count(lenTok)
	if !ok1 {
		return key, 0, 0, false
	}
	return blockKey(model, id), off, n, ok2 && ok3
}
