package store

import (
	"container/list"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// reprCache keeps, least recently used first out, the sidecar files that
// .ucm/topk read from the tiers or derived in memory, up to a byte
// budget (Options.ReprCache), so a request over candidates seen before
// reads no file and derives nothing.
//
// An entry is only used while the file it came from is unchanged: each
// entry carries the fileToken (size, CRC, publish time) of its source,
// the stored sidecar or, for one derived in memory, its block, and a
// lookup must present the token the stack reports now. A sidecar removed
// and written again, or a block gone, never serves stale data.
type reprCache struct {
	mu    sync.Mutex
	limit int64
	used  int64
	m     map[reprCacheKey]*list.Element
	lru   list.List // of *reprCacheEntry, most recent first
}

// reprCacheKey names an entry: a stored sidecar (key.Kind is Repr, kind
// and param zero) or a sidecar derived in memory from a block (key.Kind
// is Block) with a kind and param.
type reprCacheKey struct {
	key   format.Key
	kind  format.ReprKind
	param uint32
}

// reprCacheEntry is one cached sidecar file.
type reprCacheEntry struct {
	ck   reprCacheKey
	tok  fileToken
	data []byte
}

// fileToken identifies the content of a stored file: two files with the
// same token are taken to be the same file. The stack keeps every file's
// CRC, and a file's publish time across its copies.
type fileToken struct {
	size   int64
	crc    uint32
	hasCRC bool
	mtime  int64 // UnixNano
}

// tokenOf is the token of a file the stack describes.
func tokenOf(bi tiers.BlockInfo) fileToken {
	return fileToken{size: bi.Size, crc: bi.CRC, hasCRC: bi.HasCRC, mtime: bi.MTime.UnixNano()}
}

// statToken is the token of k now; ok is false when no tier holds it.
func (s *Store) statToken(k format.Key) (tok fileToken, ok bool) {
	bi, err := s.stack.Stat(k)
	if err != nil {
		return fileToken{}, false
	}
	return tokenOf(bi), true
}

// newReprCache returns a cache of limit bytes (none when limit <= 0).
func newReprCache(limit int64) *reprCache {
	return &reprCache{limit: limit, m: make(map[reprCacheKey]*list.Element)}
}

// get returns the cached file of ck when its source still has token tok.
func (c *reprCache) get(ck reprCacheKey, tok fileToken) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[ck]
	if !ok {
		return nil
	}
	e := el.Value.(*reprCacheEntry)
	if e.tok != tok {
		c.drop(el)
		return nil
	}
	c.lru.MoveToFront(el)
	return e.data
}

// put caches data as ck's file, from a source with token tok, evicting
// the least recently used entries past the budget. A file larger than
// the whole budget is not kept.
func (c *reprCache) put(ck reprCacheKey, tok fileToken, data []byte) {
	size := int64(len(data))
	if size > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[ck]; ok {
		c.drop(el)
	}
	c.m[ck] = c.lru.PushFront(&reprCacheEntry{ck: ck, tok: tok, data: data})
	c.used += size
	for c.used > c.limit {
		c.drop(c.lru.Back())
	}
}

// drop removes an entry, under c.mu.
func (c *reprCache) drop(el *list.Element) {
	e := c.lru.Remove(el).(*reprCacheEntry)
	delete(c.m, e.ck)
	c.used -= int64(len(e.data))
}
