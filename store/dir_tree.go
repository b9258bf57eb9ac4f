package store

import (
	"fmt"
	"strings"
	"sync"
)

// The directories of files models a run knows of are a tree, one node a
// directory, each holding its own name only: finding a directory, or
// listing the subdirectories of one, costs its depth or its children, not
// the model's directories. (A set of whole paths, which this replaced,
// made every listing and every rmdir look at each directory of the model:
// rm -rf of 20 000 directories took two minutes.)
//
// Directories are a resource a user creates: each costs the daemon a node
// and every directory tier an inode and a block. So their number is
// bounded (Options.MaxDirs, MaxDirsPerUser): past the bound in all, a
// mkdir fails with ENOSPC, past one user's share (root included: no user
// alone takes it all) with EDQUOT. A directory counts against the user
// whose mkdir made it this run; one found on a tier (made by an earlier
// run, or by the tiers as they took a file) counts in all only, and is
// always known, past the bound or not.

// DefaultMaxDirs is Options.MaxDirs when it is 0: enough for vLLM's fs
// tier (a directory for each 3 + 2 hex digits of a block's hash: up to
// about 10^6 a rank) on a cache of a few ranks. A directory costs the
// daemon about 300 bytes with such names, 800 with names of 255 bytes
// (measured: the daemon's resident memory after 10^5 and 2x10^4 mkdirs).
const DefaultMaxDirs = 1 << 22

// noOwner owns the directories no mkdir of this run made.
const noOwner = ^uint32(0)

// dirNode is one directory of a files model.
type dirNode struct {
	parent   *dirNode
	children map[string]*dirNode // by name; nil when none
	name     string
	owner    uint32 // uid whose mkdir made it, or noOwner
}

// treeSet is the directories of every files model this run knows of,
// and their count, in all and by the user who made them.
type treeSet struct {
	max, perUser int // bounds of MaxDirs, MaxDirsPerUser (<= 0: none)

	mu     sync.Mutex
	models map[string]*dirNode // model -> its root (the model directory, not counted)
	total  int                 // directories known, every model
	users  map[uint32]int      // directories made by each user this run
}

// setBounds sets the bounds: max in all (0: DefaultMaxDirs, negative:
// none) and perUser for one user (0: half of max, negative: none).
func (t *treeSet) setBounds(max, perUser int) {
	if max == 0 {
		max = DefaultMaxDirs
	}
	if perUser == 0 && max > 0 {
		perUser = max / 2
	}
	t.max, t.perUser = max, perUser
}

// find returns the node of dir in model, or nil; under t.mu.
func (t *treeSet) find(model, dir string) *dirNode {
	n := t.models[model]
	for n != nil && dir != "" {
		var name string
		name, dir, _ = strings.Cut(dir, "/")
		n = n.children[name]
	}
	return n
}

// known reports whether dir of model is known to exist.
func (t *treeSet) known(model, dir string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.find(model, dir) != nil
}

// add records dir of model and its parents, found on a tier or made by
// the tiers: they count in all, against no user.
func (t *treeSet) add(model, dir string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.insert(model, dir, noOwner)
}

// insert records dir of model and its parents, the new ones owned by
// owner, and reports whether dir itself is new; under t.mu.
func (t *treeSet) insert(model, dir string, owner uint32) bool {
	if t.models == nil {
		t.models = make(map[string]*dirNode)
		t.users = make(map[uint32]int)
	}
	n := t.models[model]
	if n == nil {
		n = &dirNode{name: model}
		t.models[model] = n
	}
	made := false
	for dir != "" {
		var name string
		name, dir, _ = strings.Cut(dir, "/")
		c := n.children[name]
		if c == nil {
			// Its own copy of the name: a slice of dir would keep the
			// whole path alive.
			c = &dirNode{parent: n, name: strings.Clone(name), owner: owner}
			if n.children == nil {
				n.children = make(map[string]*dirNode)
			}
			n.children[c.name] = c
			t.count(c, 1)
			made = true
		} else {
			made = false
		}
		n = c
	}
	return made
}

// count adds d (n = 1) or takes it out (n = -1) of the counts; under t.mu.
func (t *treeSet) count(d *dirNode, n int) {
	t.total += n
	if d.owner != noOwner {
		if t.users[d.owner] += n; t.users[d.owner] <= 0 {
			delete(t.users, d.owner)
		}
	}
}

// claim counts a directory uid is about to make, or fails: ErrNoSpace
// past the bound in all, ErrQuota past uid's share. The caller makes it
// and calls made, or unclaim if it could not.
func (t *treeSet) claim(uid uint32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.users == nil {
		t.users = make(map[uint32]int)
	}
	switch {
	case t.max > 0 && t.total >= t.max:
		return fmt.Errorf("%d directories in files models, the mount's bound (--max-dirs): %w", t.total, ErrNoSpace)
	case t.perUser > 0 && t.users[uid] >= t.perUser:
		return fmt.Errorf("uid %d made %d directories, its share (--max-dirs-per-user): %w", uid, t.users[uid], ErrQuota)
	}
	t.total++
	t.users[uid]++
	return nil
}

// unclaim takes back a claim of uid whose directory was not made.
func (t *treeSet) unclaim(uid uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count(&dirNode{owner: uid}, -1)
}

// made records dir of model, which uid made under a claim.
func (t *treeSet) made(model, dir string, uid uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count(&dirNode{owner: uid}, -1) // the claim becomes the node's count
	t.insert(model, dir, uid)
}

// remove forgets dir of model and whatever is known under it.
func (t *treeSet) remove(model, dir string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.find(model, dir)
	if n == nil || n.parent == nil {
		return
	}
	delete(n.parent.children, n.name)
	t.forget(n)
}

// forget takes n and the nodes under it out of the counts; under t.mu.
func (t *treeSet) forget(n *dirNode) {
	for _, c := range n.children {
		t.forget(c)
	}
	if n.parent != nil {
		t.count(n, -1)
	}
}

// children lists the known subdirectories of dir of model.
func (t *treeSet) children(model, dir string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.find(model, dir)
	if n == nil {
		return nil
	}
	out := make([]string, 0, len(n.children))
	for name := range n.children {
		out = append(out, name)
	}
	return out
}

// drop forgets model.
func (t *treeSet) drop(model string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.models[model]; n != nil {
		t.forget(n)
		delete(t.models, model)
	}
}

// DirCount is the directories of files models the mount knows of, and
// those the user uid made this run.
func (ms Models) DirCount(uid uint32) (all, user int) {
	ms.s.trees.mu.Lock()
	defer ms.s.trees.mu.Unlock()
	return ms.s.trees.total, ms.s.trees.users[uid]
}
