package sparse

import (
	"runtime"
	"testing"
)

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestProjectionCacheBounded: sign-hash codes of many shapes (each a
// (dim, bits) a user may choose through repr_kind or a topk query) leave
// at most ProjectionCacheBytes of projections in memory, and the shape
// used last is still cached.
func TestProjectionCacheBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 320 projections")
	}
	const slack = 8 << 20
	before := heapInUse()
	built := 0
	for dim := 9; dim <= 16; dim++ {
		v := make([]float32, dim)
		v[0] = 1
		for bits := MaxHashBits; bits > MaxHashBits-40*8; bits -= 8 {
			if _, err := SignHash(nil, v, bits); err != nil {
				t.Fatal(err)
			}
			built += 16 * dim * bits
		}
	}
	grown := heapInUse() - before
	t.Logf("projections built: %d MiB; the heap grew by %d MiB", built>>20, grown>>20)
	if grown > ProjectionCacheBytes+slack {
		t.Errorf("the heap grew by %d MiB after the codes of 320 shapes, more than the cache's %d MiB", grown>>20, ProjectionCacheBytes>>20)
	}
	if p, q := getProjection(16, MaxHashBits-39*8), getProjection(16, MaxHashBits-39*8); p != q {
		t.Error("the shape used last was built again")
	}
}
