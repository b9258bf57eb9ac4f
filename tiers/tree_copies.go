package tiers

import (
	"strings"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
)

// treeCopies orders the stack's own copies of Files (write-back,
// promotion, demotion: copyOut) against the removal of their directories
// (RemoveDir). A copy makes the directory of its File on the tier it
// writes to, when missing; one that began before its File was removed
// (an unlink, a directory moved) and made the directory after RemoveDir
// removed it left an empty directory on the tier behind the store's
// back: the directory the engine removed came back in listings and after
// a restart, and the next move of a directory onto that name failed
// ENOTEMPTY. So a copy is registered from before it checks that its
// source still holds the File until its writer exists, and RemoveDir
// waits for those registered beneath the directory: a copy registered
// after that wait began finds its File removed (the caller removed every
// File beneath the directory first) and makes nothing. A writer that
// exists when the directory goes has its temp file removed with it
// (RemoveDir) and aborts at its commit, whose source no longer holds it.
type treeCopies struct {
	mu     sync.Mutex
	active map[string]*treeCopy // "<model>/<dir>" of a File being copied
	// waiting, when set (tests), runs when a wait finds copies to wait for.
	waiting func()
}

// treeCopy counts the copies of one directory's Files that may still make
// it; idle is closed when the count drops to zero.
type treeCopy struct {
	n    int
	idle chan struct{}
}

// treeCopyWait bounds RemoveDir's wait for one directory's copies: a
// tier's own stall timeout ends a hung create sooner.
const treeCopyWait = 10 * time.Second

// begin registers a copy of k; the returned func ends it (once: a
// second call does nothing). Only a File
// (a tree's file) is registered: other keys' directories are the tiers'
// own shards, never removed by RemoveDir.
func (c *treeCopies) begin(k format.Key) func() {
	if !registry.Of(k).Tree() {
		return func() {}
	}
	dir := k.Model + "/" + k.ShardDir()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active == nil {
		c.active = make(map[string]*treeCopy)
	}
	e := c.active[dir]
	if e == nil {
		e = &treeCopy{idle: make(chan struct{})}
		c.active[dir] = e
	}
	e.n++
	ended := false
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if ended {
			return
		}
		ended = true
		if e.n--; e.n == 0 {
			close(e.idle)
			delete(c.active, dir)
		}
	}
}

// wait returns once no copy registered before it, of a File in the
// directory rel of model or beneath it, may still make a directory (or
// after treeCopyWait each; false then).
func (c *treeCopies) wait(model, rel string) bool {
	dir := model + "/" + rel
	c.mu.Lock()
	var idle []chan struct{}
	for d, e := range c.active {
		if d == dir || strings.HasPrefix(d, dir+"/") {
			idle = append(idle, e.idle)
		}
	}
	waiting := c.waiting
	c.mu.Unlock()
	if len(idle) > 0 && waiting != nil {
		waiting()
	}
	for _, ch := range idle {
		select {
		case <-ch:
		case <-time.After(treeCopyWait):
			return false
		}
	}
	return true
}
