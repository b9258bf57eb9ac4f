package light

import (
	"log/slog"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Kernel nodes of published files
//
// The kernel keeps a node for every name it has looked up until memory
// pressure makes it forget the name, and the daemon keeps its own for
// each: a light node (layer.go, ~80 bytes), or a go-fuse node (its Inode,
// its place in the parent's children and in the node-id table, our
// storedFile: some 600 bytes) for a file used or looked up outside a
// shard listing. Options.KernelNodes bounds how many nodes of published
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
// Light nodes (layer.go) join the same FIFO when the kernel first gets
// one, and are handed back the same way (by node id; the entry
// invalidation names the shard's node and the file's name); their FORGET
// frees the table's slot. A light node costs the daemon ~80 bytes, so the
// bound now mostly bounds what the kernel keeps (an inode and a dentry per
// name).
//
// The bound is off by default: measured on a 2-vCPU VM, a walk of more
// names than the bound runs 4-6x slower (each pruned node costs the
// kernel's prune and a FORGET, ~50 µs), so bounding trades walk speed for
// memory; operators of very large models choose it (docs/operations.md).

// PruneBatch is how many nodes one notification hands back.
const PruneBatch = 1024

// kernelNode is a node given to the kernel: a go-fuse node, or a light
// node's id.
type kernelNode struct {
	n     *gofs.Inode
	light uint64
}

// Pruner is the FIFO of published files' nodes given to the kernel. A
// nil Pruner bounds nothing.
type Pruner struct {
	limit  int
	table  *Table
	log    *slog.Logger
	root   func() *gofs.Inode  // the root node, nil until mounted
	server func() *fuse.Server // the server, nil until it started

	mu      sync.Mutex
	fifo    []kernelNode // a ring: fifo[head] is the oldest
	head, n int
	running bool // the goroutine is sending a batch
	noPrune bool // the kernel refused FUSE_NOTIFY_PRUNE: invalidate names
}

// NewPruner returns the FIFO bounding the nodes to limit (nil for no
// bound, limit <= 0), handing light nodes of table back too.
func NewPruner(limit int, table *Table, log *slog.Logger, root func() *gofs.Inode, server func() *fuse.Server) *Pruner {
	if limit <= 0 {
		return nil
	}
	return &Pruner{limit: limit, table: table, log: log, root: root, server: server, fifo: make([]kernelNode, limit+PruneBatch)}
}

// Add records a go-fuse node just handed to the kernel.
func (p *Pruner) Add(n *gofs.Inode) {
	if p != nil {
		p.push(kernelNode{n: n})
	}
}

// AddLight records a light node just handed to the kernel.
func (p *Pruner) AddLight(id uint64) {
	if p != nil {
		p.push(kernelNode{light: id})
	}
}

// push records a node and starts handing back the oldest when there are
// too many.
func (p *Pruner) push(n kernelNode) {
	p.mu.Lock()
	if p.n == len(p.fifo) { // the goroutine lags: the oldest leave untold
		p.fifo[p.head] = kernelNode{}
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

// take removes up to PruneBatch of the oldest nodes while over the limit.
func (p *Pruner) take() []kernelNode {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := min(p.n-p.limit, PruneBatch)
	if k <= 0 {
		p.running = false
		return nil
	}
	out := make([]kernelNode, k)
	for i := range out {
		out[i] = p.fifo[p.head]
		p.fifo[p.head] = kernelNode{}
		p.head = (p.head + 1) % len(p.fifo)
	}
	p.n -= k
	return out
}

// run hands batches back until the FIFO is under the limit.
func (p *Pruner) run() {
	for {
		batch := p.take()
		if batch == nil {
			return
		}
		p.send(batch)
	}
}

// send hands one batch back to the kernel.
func (p *Pruner) send(batch []kernelNode) {
	root, srv := p.root(), p.server()
	if root == nil {
		return
	}
	var nodes []*gofs.Inode
	var lights []uint64
	for _, kn := range batch {
		if kn.n != nil {
			nodes = append(nodes, kn.n)
		} else {
			lights = append(lights, kn.light)
		}
	}
	p.mu.Lock()
	noPrune := p.noPrune
	p.mu.Unlock()
	if !noPrune {
		errno := root.NotifyPrune(nodes)
		if errno == 0 && len(lights) > 0 && srv != nil {
			errno = syscallErrno(srv.PruneNotify(lights))
		}
		if errno == 0 {
			return
		}
		p.log.Info("kernel nodes: no FUSE_NOTIFY_PRUNE, invalidating names instead", "errno", errno)
		p.mu.Lock()
		p.noPrune = true
		p.mu.Unlock()
	}
	for _, n := range nodes {
		if name, parent := n.Parent(); parent != nil {
			parent.NotifyEntry(name)
		}
	}
	for _, id := range lights {
		if li, ok := p.table.Get(id); ok && srv != nil {
			srv.EntryNotify(li.Shard, li.Key.FileName())
		}
	}
}

// syscallErrno is the errno of a status.
func syscallErrno(st fuse.Status) syscall.Errno { return syscall.Errno(st) }
