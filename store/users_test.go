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
		if err := s.AdmitModel(1000); err != nil {
			t.Fatalf("model %s of uid 1000: %v", m, err)
		}
		s.AddModel(m)
		if err := s.SetModelOwner(m, ModelOwner{Uid: 1000, Gid: 1000, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AdmitModel(1000); !errors.Is(err, ErrQuota) {
		t.Fatalf("a 3rd model of uid 1000: %v, want ErrQuota", err)
	}
	if err := s.AdmitModel(0); err != nil {
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
	s.AddModel("r") // root's
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
