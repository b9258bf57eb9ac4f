package store

import (
	"errors"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestUserLimits: a user other than root owns at most MaxModelsPerUser
// models, and its models hold at most MaxBytesPerUser bytes together,
// whoever writes them (ErrQuota); root has no limit.
func TestUserLimits(t *testing.T) {
	s := newTestStore(t, Options{MaxModelsPerUser: 2, MaxBytesPerUser: 3000})
	for _, m := range []string{"a", "b"} {
		if err := s.Models().Admit(1000); err != nil {
			t.Fatalf("model %s of uid 1000: %v", m, err)
		}
		s.Models().Add(m)
		if err := s.Models().SetOwner(m, ModelOwner{Uid: 1000, Gid: 1000, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Models().Admit(1000); !errors.Is(err, ErrQuota) {
		t.Fatalf("a 3rd model of uid 1000: %v, want ErrQuota", err)
	}
	if err := s.Models().Admit(0); err != nil {
		t.Fatalf("root: %v", err)
	}
	k1, d1 := testBlockOf("a", 1, 1800)
	if _, err := publish(t, s, k1, d1); err != nil {
		t.Fatal(err)
	}
	k2, d2 := testBlockOf("b", 2, 1800)
	if _, err := publish(t, s, k2, d2); !errors.Is(err, ErrQuota) {
		t.Fatalf("past uid 1000's bytes over two models: %v, want ErrQuota", err)
	}
	s.Models().Add("r") // root's
	k3, d3 := testBlockOf("r", 3, 1800)
	if _, err := publish(t, s, k3, d3); err != nil {
		t.Fatalf("root's model: %v", err)
	}
}

// testBlockOf is block n of model with payload bytes.
func testBlockOf(model string, n, payload int) (format.Key, []byte) {
	k, d := testBlock(n, payload)
	k.Model = model
	return k, d
}

// TestModelPermitsGroups: the group bits apply to the model's group (by
// the caller's primary group or another), the other bits to everyone
// else, and the caller's other groups are looked up only when the answer
// depends on them.
func TestModelPermitsGroups(t *testing.T) {
	s := newTestStore(t, Options{})
	s.Models().Add("g")
	asked := 0
	for _, c := range []struct {
		mode    uint32
		uid     uint32
		gid     uint32
		inGroup bool
		want    bool
		lookup  bool
	}{
		{0o755, 2000, 3000, false, true, false}, // group and others alike: no lookup
		{0o700, 2000, 3000, false, false, false},
		{0o750, 2000, 100, false, true, false}, // primary group
		{0o750, 2000, 3000, true, true, true},  // another group
		{0o705, 2000, 3000, true, false, true}, // a member is held to the group bits
		{0o705, 2000, 3000, false, true, true}, // others to the other bits
		{0o700, 1000, 100, false, true, false}, // the owner
	} {
		if err := s.Models().SetOwner("g", ModelOwner{Uid: 1000, Gid: 100, Mode: c.mode}); err != nil {
			t.Fatal(err)
		}
		asked = 0
		in := func(uint32) bool { asked++; return c.inGroup }
		if got := s.Models().Permits("g", c.uid, c.gid, in, AccessExec); got != c.want || (asked > 0) != c.lookup {
			t.Errorf("mode %o uid %d gid %d member %v: %v (groups looked up: %v), want %v (%v)", c.mode, c.uid, c.gid, c.inGroup, got, asked > 0, c.want, c.lookup)
		}
	}
}
