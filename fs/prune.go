package fs

import (
	"sync"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// Kernel nodes of published files
//
// The kernel keeps a node for every name it has looked up until memory
// pressure makes it forget the name, and the daemon must keep its own
// node for each (go-fuse's Inode, its place in the parent's children and
// in the node-id table, our storedFile: some 600 bytes). A `du -s` of a
// model of 10^6 blocks so holds 600 MB in the daemon for blocks nobody
// may touch again. Options.KernelNodes bounds how many nodes of published
// files the daemon lets the kernel keep: every node made for a lookup
// joins a FIFO, and once more than the bound are in it, the oldest are
// handed back in batches with FUSE_NOTIFY_PRUNE (Linux 6.18), which makes
// the kernel drop those of them nobody uses (no open file, no working
// directory) and FORGET them; go-fuse then drops its node and the number
// is freed (OnForget). A pruned name is looked up again (one LOOKUP,
// answered from the index) when next used. On a kernel without the
// notification each name is invalidated instead (FUSE_NOTIFY_INVAL_ENTRY,
// one per name). Everything runs in one background goroutine: a
// notification may wait on the kernel's locks, which a request being
// answered holds.
//
// The bound is off by default: measured on a 2-vCPU VM, a walk of more
// names than the bound runs 4-6x slower (each pruned node costs the
// kernel's prune and a FORGET, ~50 µs), so bounding trades walk speed for
// memory; operators of very large models choose it (docs/operations.md).

// DefaultKernelNodes is the default of Options.KernelNodes: no bound.
const DefaultKernelNodes = -1

// pruneBatch is how many nodes one notification hands back.
const pruneBatch = 1024

// pruner is the FIFO of published files' nodes given to the kernel.
type pruner struct {
	s     *fsState
	limit int

	mu      sync.Mutex
	fifo    []*gofs.Inode // a ring: fifo[head] is the oldest
	head, n int
	running bool // the goroutine is sending a batch
	noPrune bool // the kernel refused FUSE_NOTIFY_PRUNE: invalidate names
}

func newPruner(s *fsState, limit int) *pruner {
	if limit <= 0 {
		return nil
	}
	return &pruner{s: s, limit: limit, fifo: make([]*gofs.Inode, limit+pruneBatch)}
}

// add records a node just handed to the kernel and starts handing back
// the oldest when there are too many.
func (p *pruner) add(n *gofs.Inode) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.n == len(p.fifo) { // the goroutine lags: the oldest leave untold
		p.fifo[p.head] = nil
		p.head = (p.head + 1) % len(p.fifo)
		p.n--
	}
	p.fifo[(p.head+p.n)%len(p.fifo)] = n
	p.n++
	start := p.n > p.limit && !p.running
	if start {
		p.running = true
	}
	p.mu.Unlock()
	if start {
		go p.run()
	}
}

// take removes up to pruneBatch of the oldest nodes while over the limit.
func (p *pruner) take() []*gofs.Inode {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := min(p.n-p.limit, pruneBatch)
	if k <= 0 {
		p.running = false
		return nil
	}
	out := make([]*gofs.Inode, k)
	for i := range out {
		out[i] = p.fifo[p.head]
		p.fifo[p.head] = nil
		p.head = (p.head + 1) % len(p.fifo)
	}
	p.n -= k
	return out
}

// run hands batches back until the FIFO is under the limit.
func (p *pruner) run() {
	for {
		batch := p.take()
		if batch == nil {
			return
		}
		p.send(batch)
	}
}

// send hands one batch back to the kernel.
func (p *pruner) send(batch []*gofs.Inode) {
	root := p.s.root
	if root == nil {
		return
	}
	p.mu.Lock()
	noPrune := p.noPrune
	p.mu.Unlock()
	if !noPrune {
		errno := root.NotifyPrune(batch)
		if errno == 0 {
			return
		}
		p.s.log.Info("kernel nodes: no FUSE_NOTIFY_PRUNE, invalidating names instead", "errno", errno)
		p.mu.Lock()
		p.noPrune = true
		p.mu.Unlock()
	}
	for _, n := range batch {
		if name, parent := n.Parent(); parent != nil {
			parent.NotifyEntry(name)
		}
	}
}
