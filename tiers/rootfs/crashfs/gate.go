package crashfs

import (
	"os"
	"sync"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
)

// OpenWrapped opens a Root at dir, as the tiers' own open does, under
// Wrap with before: the signature of dir.Config.OpenFS, for a tier on a
// real directory that fails, stalls or acts at a chosen operation.
func OpenWrapped(before func(op, rel string) error) func(dir string, perm uint32) (rootfs.FS, error) {
	return func(dir string, perm uint32) (rootfs.FS, error) {
		r, err := rootfs.Open(dir, os.FileMode(perm))
		if err != nil {
			return nil, err // not a nil *Root in a non-nil FS
		}
		return Wrap(r, before), nil
	}
}

// Gate holds the operations a test chooses until it opens: a stall that
// ends when the test says. Its Before is the hook (Wrap, OpenWrapped,
// Disk.SetFault); it holds nothing until Hold.
type Gate struct {
	held    atomic.Pointer[map[string]bool] // the names of the operations held
	release chan struct{}
	once    sync.Once
	calls   atomic.Int64
}

// NewGate returns a Gate that holds nothing yet.
func NewGate() *Gate { return &Gate{release: make(chan struct{})} }

// Hold makes the gate hold, from now until Open, every operation whose
// name is one of ops.
func (g *Gate) Hold(ops ...string) {
	names := make(map[string]bool, len(ops))
	for _, op := range ops {
		names[op] = true
	}
	g.held.Store(&names)
}

// Open lets the held operations go on, and every later one through.
// Opening twice is harmless.
func (g *Gate) Open() { g.once.Do(func() { close(g.release) }) }

// Calls is how many operations have passed the hook, held or not.
func (g *Gate) Calls() int64 { return g.calls.Load() }

// Before is the hook: it counts the operation and waits for Open if the
// gate holds it. It never fails one.
func (g *Gate) Before(op, rel string) error {
	g.calls.Add(1)
	if held := g.held.Load(); held != nil && (*held)[op] {
		<-g.release
	}
	return nil
}
