package sparse

import (
	"container/list"
	"sync"
)

// ProjectionCacheBytes bounds the memory the sign-hash projections kept
// between uses take together: 64 MiB, two of the largest (MaxHashDim ×
// MaxHashBits, 32 MiB with its transpose) or hundreds of the usual
// ones (head_dim 128, 128 bits: 256 KiB). The shapes are chosen by
// whoever writes a block, sets a model's repr_kind or sends a topk
// query, so the cache must not grow with them: past the bound, the
// projection used the longest ago is dropped (it is rebuilt when it is
// needed again).
const ProjectionCacheBytes = 64 << 20

// projections is the cache of getProjection; projBuild lets one
// projection be built at a time, so that building them (up to seconds
// of CPU each for the largest shapes) takes at most one core of the
// daemon whatever the number of shapes asked for at once, and a shape
// asked for by many callers at once is built once.
var (
	projections = projCache{budget: ProjectionCacheBytes}
	projBuild   sync.Mutex
)

// getProjection returns the projection for dim and bits, from the cache
// or built (and cached). The caller has checked the bounds.
func getProjection(dim, bits int) *projection {
	key := projKey{dim, bits}
	if p := projections.get(key); p != nil {
		return p
	}
	projBuild.Lock()
	defer projBuild.Unlock()
	if p := projections.get(key); p != nil { // built while this call waited
		return p
	}
	p := newProjection(dim, bits)
	projections.put(key, p)
	return p
}

type projKey struct{ dim, bits int }

// projCache keeps projections, the most recently used first, up to
// budget bytes (or the last one put, should it alone be larger).
type projCache struct {
	mu     sync.Mutex
	budget int
	used   int
	m      map[projKey]*list.Element
	lru    list.List // of *projection, most recent first
}

// size is the memory a projection holds: its rows and their transpose.
func (p *projection) size() int { return 8 * (len(p.rows) + len(p.cols)) }

// get returns the cached projection of key (nil: none), now the most
// recently used.
func (c *projCache) get(key projKey) *projection {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*projection)
}

// put adds p and drops the least recently used projections past the
// budget.
func (c *projCache) put(key projKey, p *projection) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[projKey]*list.Element)
	}
	if _, ok := c.m[key]; ok {
		return
	}
	c.m[key] = c.lru.PushFront(p)
	c.used += p.size()
	for c.used > c.budget && c.lru.Len() > 1 {
		old := c.lru.Remove(c.lru.Back()).(*projection)
		delete(c.m, projKey{old.dim, old.bits})
		c.used -= old.size()
	}
}
