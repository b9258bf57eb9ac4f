package tiers

import (
	"os"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
)

// Reusing a descriptor
//
// The mount keeps a block's descriptor open for a short while after its
// last close (fs/opencache.go), so that the next open of the block (UCM
// loads a block with four threads, each opening it) skips the openat and,
// with passthrough, the backing registration. A kept descriptor may be
// reused only while it still reads the block's current file on its tier:
// a Token names the tier's index entry of that file, and an entry is
// replaced whenever the file is (removed, evicted, published again), so
// comparing pointers answers without a syscall.

// Token names the tier file a Handle was opened from: the tier and its
// index entry of the file. The zero Token names nothing.
type Token struct {
	e  *index.Entry
	id TierID
}

// Valid reports whether t names a file.
func (t Token) Valid() bool { return t.e != nil }

// Reuse reports whether a descriptor of k opened with token t still
// reads k's current file and the read path would read that same file,
// and if so counts the open as Open does (the tier's recency, the
// admission filter, the hit counters, and for a lower tier the promotion
// decision). A false answer asks the caller to close the descriptor and
// Open again.
func (s *Stack) Reuse(k format.Key, t Token) bool {
	switch {
	case t.e == nil:
		return false
	case t.id == Memory:
		if _, ok := s.mem.Index().TouchIf(k, t.e); !ok {
			return false
		}
		s.admit.Get(s.admitKey(k))
		s.stats.memHits.Add(1)
		return true
	}
	d := s.dirs[t.id-1]
	if s.mem.Index().Has(k) {
		return false // promoted meanwhile: Open reads memory
	}
	size, ok := d.Index().TouchIf(k, t.e)
	if !ok {
		return false
	}
	s.stats.lowerHits.Add(1)
	s.maybePromote(k, size)
	return true
}

// Current reports, without counting a use, whether the descriptor of
// token t still reads k's current file and is what Open would read.
func (s *Stack) Current(k format.Key, t Token) bool {
	switch {
	case t.e == nil:
		return false
	case t.id == Memory:
		return s.mem.Index().IsEntry(k, t.e)
	}
	return !s.mem.Index().Has(k) && s.dirs[t.id-1].Index().IsEntry(k, t.e)
}

// openLower opens k on directory tier id with its token: the entry is
// read before and after the open, so a file replaced meanwhile gives a
// zero token (the descriptor is used once, never reused).
func (s *Stack) openLower(k format.Key, id TierID) (*os.File, Token, error) {
	d := s.dirs[id-1]
	e := d.Index().EntryOf(k)
	f, err := d.Open(k)
	if err != nil {
		return nil, Token{}, err
	}
	if e == nil || d.Index().EntryOf(k) != e {
		return f, Token{}, nil
	}
	return f, Token{e: e, id: id}, nil
}
