package store

import (
	"errors"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// TestPendingFilesBounded: the files being written are bounded in number,
// by user and in all (each holds a descriptor of the daemon), whatever
// their bytes: an abandoned empty staging file counts. Past a user's share
// a create fails with ErrQuota, past the mount's with ErrPendingFull; a
// discarded file gives its place back.
func TestPendingFilesBounded(t *testing.T) {
	s := newTestStore(t, Options{})
	s.budget.maxFiles, s.budget.perUserFiles = 5, 3
	begin := func(uid uint32, n int) (*Draft, error) {
		k, _ := testBlock(n, 64)
		d, _, err := s.Writes().Begin(Proc{Tgid: 100 + uid, Uid: uid, Gid: uid}, k, k.ID.String()+format.StagingSuffix, OpenMode{Staging: true, Excl: true})
		return d, err
	}
	var drafts []*Draft
	for i := range 3 {
		d, err := begin(1000, i)
		if err != nil {
			t.Fatalf("file %d of uid 1000: %v", i+1, err)
		}
		drafts = append(drafts, d)
	}
	if _, err := begin(1000, 3); !errors.Is(err, ErrQuota) {
		t.Fatalf("a 4th empty file of uid 1000: %v, want ErrQuota", err)
	}
	for i := range 2 {
		d, err := begin(2000, 10+i)
		if err != nil {
			t.Fatalf("file %d of uid 2000: %v", i+1, err)
		}
		drafts = append(drafts, d)
	}
	if _, err := begin(3000, 20); !errors.Is(err, ErrPendingFull) {
		t.Fatalf("a 6th file in all: %v, want ErrPendingFull", err)
	}
	drafts[0].Discard()
	if _, err := begin(3000, 21); err != nil {
		t.Fatalf("after a discard: %v", err)
	}
}

// TestPendingShareDefault: by default one user's share of the bytes being
// written is half the budget, so that no user alone takes all of it.
func TestPendingShareDefault(t *testing.T) {
	s := newTestStore(t, Options{MaxPending: 1 << 20})
	if s.budget.perUser != 1<<19 {
		t.Fatalf("default share %d, want half of %d", s.budget.perUser, 1<<20)
	}
	k, _ := testBlock(1, 64)
	d, _, err := s.Writes().Begin(Proc{Tgid: 7, Uid: 1000, Gid: 1000}, k, k.ID.String()+".bin", OpenMode{Excl: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Discard()
	if err := s.admitPending(1000, 600<<10, false); !errors.Is(err, ErrQuota) {
		t.Fatalf("600 KiB of one user's writes against a 1 MiB budget: %v, want ErrQuota", err)
	}
	if err := s.admitPending(2000, 400<<10, false); err != nil {
		t.Fatalf("another user's 400 KiB: %v", err)
	}
}

// TestStagingExpires: a staging file whose descriptors are all closed and
// that nobody renames is discarded after the TTL (it held a descriptor of
// the daemon and bytes of the budget); one with a descriptor open, or
// parked for less, is kept.
func TestStagingExpires(t *testing.T) {
	s := newTestStore(t, Options{StagingTTL: -1}) // no background sweep: the test sweeps
	begin := func(n int) (*Draft, *Writer) {
		k, _ := testBlock(n, 64)
		d, w, err := s.Writes().Begin(Proc{Tgid: 9, Uid: 1000, Gid: 1000}, k, k.ID.String()+format.StagingSuffix, OpenMode{Staging: true, Excl: true})
		if err != nil {
			t.Fatal(err)
		}
		return d, w
	}
	parked, pw := begin(1)
	if _, err := pw.Close(t.Context(), 9); err != nil {
		t.Fatal(err)
	}
	pw.Release(t.Context())
	open, _ := begin(2) // its descriptor stays open
	now := time.Now()
	if n := s.Writes().ExpireStaging(now, time.Hour); n != 0 {
		t.Fatalf("swept %d files parked for less than the TTL", n)
	}
	if n := s.Writes().ExpireStaging(now.Add(2*time.Hour), time.Hour); n != 1 {
		t.Fatalf("swept %d files, want the one parked past the TTL", n)
	}
	if !errors.Is(parked.verdictOf(), ErrDiscarded) || !open.Writable() {
		t.Fatalf("parked: %v, open still writable: %v", parked.verdictOf(), open.Writable())
	}
}

// verdictOf is w's verdict (tests).
func (w *Draft) verdictOf() error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.verdict
}

// TestPendingCharges: the bytes a user's files being written count are
// kept as they grow, so admission reads sums rather than the files: the
// daemon's own writes count at once, the kernel's (passthrough, written to
// the file directly) once the budget refreshes or the file is closed; a
// discarded file gives back all it counted.
func TestPendingCharges(t *testing.T) {
	s := newTestStore(t, Options{MaxPending: 1 << 20, StagingTTL: -1})
	begin := func(uid uint32, n int) (*Draft, *Writer) {
		k, _ := testBlock(n, 64)
		d, w, err := s.Writes().Begin(Proc{Tgid: 100 + uid, Uid: uid, Gid: uid}, k, k.ID.String()+format.StagingSuffix, OpenMode{Staging: true, Excl: true})
		if err != nil {
			t.Fatal(err)
		}
		return d, w
	}
	d1, w1 := begin(1000, 1)
	chunk := make([]byte, 300<<10)
	if _, err := w1.WriteAt(chunk, 0); err != nil {
		t.Fatalf("300 KiB of a 512 KiB share: %v", err)
	}
	if _, err := w1.WriteAt(chunk[:1000], 100); err != nil {
		t.Fatalf("a rewrite within what the file holds: %v", err)
	}
	if _, err := w1.WriteAt(chunk, 300<<10); !errors.Is(err, ErrQuota) {
		t.Fatalf("600 KiB of a 512 KiB share: %v, want ErrQuota", err)
	}
	d2, w2 := begin(2000, 2)
	if _, err := w2.File().WriteAt(chunk, 0); err != nil { // as passthrough writes: unseen
		t.Fatal(err)
	}
	if err := s.admitPending(2000, 300<<10, false); err != nil {
		t.Fatalf("before the refresh, the unseen bytes do not count yet: %v", err)
	}
	s.refreshPending()
	if err := s.admitPending(2000, 300<<10, false); !errors.Is(err, ErrQuota) {
		t.Fatalf("after the refresh, 300 KiB more of uid 2000: %v, want ErrQuota", err)
	}
	d1.Discard()
	d2.Discard()
	if s.budget.total != 0 || len(s.budget.users) != 0 {
		t.Fatalf("after both discards: %d bytes, %d users counted", s.budget.total, len(s.budget.users))
	}
}
