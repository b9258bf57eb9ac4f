package control

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/gpu"
)

// TestGPUSimFileOwner: a sim region's file must belong to the caller
// unless the caller is root (the daemon writes into it, maybe as root).
func TestGPUSimFileOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv")
	if err := os.WriteFile(path, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 12345, 12345); err != nil {
		t.Skipf("chown: %v", err)
	}
	spec := gpu.RegionSpec{Size: 4096}
	for _, tc := range []struct {
		uid  uint32
		want error
	}{{12345, nil}, {0, nil}, {54321, ErrAccess}} {
		ctx := WithCaller(context.Background(), Caller{Uid: tc.uid})
		f, err := openSimFile(ctx, path, spec)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("caller uid %d: %v, want %v", tc.uid, err, tc.want)
		}
		if f != nil {
			f.Close()
		}
	}
}
