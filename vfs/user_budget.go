package vfs

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
)

// Two things a user holds open cost the daemon in proportion to what the
// user opens, and any user may open as much as its descriptor limit, in
// as many processes as it likes, lets it. So both are bounded, per user
// (root included) and in all, by a userBudget each:
//
//   - the listings of open directories (listed): an open directory keeps
//     the listing its first read took, so that offsets stay valid while
//     names come and go (fs/filesdir/list.go, light.Layer's snapshot): 2,000
//     descriptors of one 20,000-name directory, each read once, took 2 GB
//     of the daemon (~50 bytes a name). 2^22 names per user (the daemon
//     grew by ~300 MB at it; a directory of 10^6 names listed four times
//     at once), 2^24 in all.
//     A listing is charged to the user whose read took it, and given back
//     at a rewind or the close.
//   - the open handles of published files, of .ucm/stats and of
//     directories (reading): a published file's may hold a descriptor of
//     the daemon (one per file, shared by its opens), and another user's
//     19,000 opens of distinct files took 19,000 of the daemon's 20,000
//     (a few more, and the daemon's own opens of tier files fail with
//     EMFILE for every user); the others hold a snapshot or a listing. A
//     quarter of the daemon's descriptor limit in all (the files being
//     written may take half: store's pending budget), half of that per
//     user.
//
// Past a user's share the request fails with EMFILE ("too many open
// files": what the user holds open), past the bound with ENFILE.

// ListingCharge is what a listing of n entries, its two dots among them,
// holds of its user's budget of listed names: the dots cost nothing, as
// they are in every listing.
func ListingCharge(n int) int { return max(n-2, 0) }

// Errors of the budgets, mapped to errno in fs/errno.go.
var (
	ErrUserBudget = errors.New("the user's share is used")
	ErrFullBudget = errors.New("the bound is reached")
)

const (
	maxListed        = 1 << 24 // names held by open directories' listings, every user together
	maxListedPerUser = 1 << 22 // what one user's open directories may hold of them
)

// UserBudget counts what each user holds of one kind (what), against a
// bound in all (max) and one per user (perUser).
type UserBudget struct {
	what         string
	mu           sync.Mutex
	total        int64
	users        map[uint32]int64
	max, perUser int64
}

// NewListingBudget is the budget of open directories' listings.
func NewListingBudget() UserBudget {
	return UserBudget{what: "names in open directories' listings", max: maxListed, perUser: maxListedPerUser}
}

// NewReadBudget is the budget of open handles of published files: a
// quarter of the daemon's descriptor limit in all, half of that per user.
func NewReadBudget() UserBudget {
	n := int64(4096)
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 {
		n = int64(min(rl.Cur/4, 1<<18))
	}
	return UserBudget{what: "open files", max: n, perUser: max(n/2, 16)}
}

// Hold charges uid n, or refuses it.
func (b *UserBudget) Hold(uid uint32, n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.users == nil {
		b.users = make(map[uint32]int64)
	}
	c := int64(n)
	if b.users[uid]+c > b.perUser {
		return fmt.Errorf("%s: the user holds %d of %d, %d more: %w", b.what, b.users[uid], b.perUser, n, ErrUserBudget)
	}
	if b.total+c > b.max {
		return fmt.Errorf("%s: %d held of %d, %d more: %w", b.what, b.total, b.max, n, ErrFullBudget)
	}
	b.users[uid] += c
	b.total += c
	return nil
}

// Free gives back n uid held.
func (b *UserBudget) Free(uid uint32, n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total -= int64(n)
	if b.users[uid] -= int64(n); b.users[uid] <= 0 {
		delete(b.users, uid)
	}
}

// SetBounds sets the bound in all and the share of one user (tests).
func (b *UserBudget) SetBounds(max, perUser int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.max, b.perUser = max, perUser
}

// Held is what uid holds now.
func (b *UserBudget) Held(uid uint32) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.users[uid]
}
