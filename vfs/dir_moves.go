package vfs

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/format"
)

// DirMoves are the directory moves in flight. A request on a path
// beneath one's old or new path waits for it to end (fs/filesdir's Dir.ops,
// storedFile.served), as the kernel's locks make a local disk's rename
// look atomic: no request sees the files go one by one, and no lookup
// leaves the kernel a cached miss of a file that was only on its way
// (the kernel keeps a miss for the negative timeout, in the directory's
// node, which the rename moves with the directory). Requests elsewhere
// pay one atomic load.
type DirMoves struct {
	n    atomic.Int32
	seq  atomic.Uint64 // counts the moves' begins and ends (settled)
	mu   sync.Mutex
	cond *sync.Cond // on mu, made at the first move
	list []DirMove
}

// DirMove is one move: From of FromModel to To of ToModel.
type DirMove struct{ FromModel, From, ToModel, To string }

// Moves returns the key k has once the move is over, and whether the
// move takes k along (k is a file beneath From of FromModel).
func (m DirMove) Moves(k format.Key) (format.Key, bool) {
	if k.Model != m.FromModel || !Beneath(k.Name, m.From) {
		return k, false
	}
	return format.FileKey(m.ToModel, m.To+strings.TrimPrefix(k.Name, m.From)), true
}

// Begin records the move m as in flight.
func (g *DirMoves) Begin(m DirMove) {
	g.mu.Lock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	g.list = append(g.list, m)
	g.seq.Add(1)
	g.n.Add(1)
	g.mu.Unlock()
}

// End records that the move m is over.
func (g *DirMoves) End(m DirMove) {
	g.mu.Lock()
	g.list = slices.DeleteFunc(g.list, func(x DirMove) bool { return x == m })
	g.n.Add(-1)
	g.seq.Add(1)
	g.cond.Broadcast()
	g.mu.Unlock()
}

// Settled runs fn, the answer of a request beneath a directory of a files
// model, again (at most twice more) while a directory move began or ended
// while it ran: the request waited for the moves covering its directory
// before it looked, but one that began after that wait moved the files
// under it, and its answer (a file missing from a directory half moved,
// or the node of a file at the path it left) would be cached by the
// kernel in a directory node the move took along. The last try's answer
// stands, with Settled reporting false, when moves went on all along: the
// caller then lets the kernel cache nothing of it.
func (g *DirMoves) Settled(fn func()) (cached bool) {
	for try := 0; ; try++ {
		seq := g.seq.Load()
		fn()
		if g.seq.Load() == seq {
			return true
		}
		if try == 2 {
			return false
		}
	}
}

// Seq counts the moves' begins and ends: a listing taken when it was n is
// current while it is still n and no move is in flight (Quiet).
func (g *DirMoves) Seq() uint64 { return g.seq.Load() }

// Quiet reports whether no move is in flight and none began or ended
// since Seq was seq.
func (g *DirMoves) Quiet(seq uint64) bool { return g.n.Load() == 0 && g.seq.Load() == seq }

// Wait returns once no move in flight covers path of model, and whether
// it waited.
func (g *DirMoves) Wait(model, path string) (waited bool) {
	if g.n.Load() == 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.covers(model, path) {
		g.cond.Wait()
		waited = true
	}
	return waited
}

// covers reports whether a move in flight has path beneath its old or
// new path (under g.mu).
func (g *DirMoves) covers(model, path string) bool {
	for _, m := range g.list {
		if m.FromModel == model && Beneath(path, m.From) || m.ToModel == model && Beneath(path, m.To) {
			return true
		}
	}
	return false
}

// Beneath reports whether path is dir or beneath it.
func Beneath(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}
