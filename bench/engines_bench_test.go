package bench

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ucmfs/ucmfs/internal/engineproto"
	"golang.org/x/sys/unix"
)

// The engines' file backends (internal/engineproto) on a files model of
// each mount and on a plain directory of the nvme tiers' disk, in turn in
// every round: vLLM's fs tier storing and loading 2 MiB blocks with 4
// threads (O_DIRECT temporary file, rename; O_DIRECT readv), and SGLang's
// file backend's exists over a flat directory of 10^5 pages and its
// clear() of a flat directory. docs/performance.md gives the ratios.

const (
	engineWorkers = 4       // the backends' I/O threads
	flatPages     = 100_000 // pages of the flat directory exists runs over
	clearPages    = 10_000  // pages one clear() removes
	pageSize      = 4096
)

// engineSeq numbers the blocks the store benchmarks write.
var engineSeq atomic.Int64

// engineRoots holds the directories made once per process.
var engineRoots sync.Map // target name + "/" + name -> string

// engineRoot is the directory of name on target t: a model of the files
// layout on a mount, a plain directory otherwise.
func engineRoot(b *testing.B, t *target, name string) string {
	b.Helper()
	key := t.name + "/" + name
	if r, ok := engineRoots.Load(key); ok {
		return r.(string)
	}
	root := filepath.Join(t.root, "bench-"+name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	if t.mounted() {
		if err := unix.Setxattr(root, "user.ucm.layout", []byte("files"), 0); err != nil {
			b.Fatal(err)
		}
	}
	engineRoots.Store(key, root)
	return root
}

// runEngines runs fn on every target but tmpfs, rounds() times.
func runEngines(b *testing.B, fn func(b *testing.B, t *target)) {
	runTargets(b, func(b *testing.B, t *target) {
		if t.name == tmpfs {
			b.Skip("the engines' baseline is the nvme disk")
		}
		fn(b, t)
	})
}

// vllmOn is vLLM's fs tier over name on t, set up.
func vllmOn(b *testing.B, t *target, name string) *engineproto.VLLM {
	v := &engineproto.VLLM{Root: engineRoot(b, t, name), Salt: "bench", Model: "m", Direct: true}
	if err := v.Setup(); err != nil {
		b.Fatal(err)
	}
	return v
}

// parallel runs fn(i) for i in [0, n) on engineWorkers goroutines.
func parallel(b *testing.B, n int, fn func(i int) error) {
	var wg sync.WaitGroup
	var next atomic.Int64
	var failed atomic.Pointer[error]
	for range engineWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() != nil {
					return
				}
				if err := fn(i); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		b.Fatal(*p)
	}
}

// vllmCPU is a block in vLLM's CPU tier: page-aligned memory allocated
// once, which store_block writes from (O_DIRECT) as vLLM does.
var vllmCPU = sync.OnceValue(func() []byte {
	buf := engineproto.AlignedBuf(bigBlock)
	copy(buf, newBlock(bigBlock).buf)
	return buf
})

// vllmViews are load_block's destinations, slices of vLLM's CPU tier:
// page-aligned, allocated once per thread (taken and given back per load).
var vllmViews = sync.Pool{New: func() any {
	b := engineproto.AlignedBuf(bigBlock)
	return &b
}}

// BenchmarkVLLMStore2MiB times vLLM's store_block of new 2 MiB blocks by
// 4 threads: stat, makedirs, the O_DIRECT temporary file written from the
// CPU tier's buffer and renamed over the final name. Write-back runs
// during the timing; the blocks are removed after it.
func BenchmarkVLLMStore2MiB(b *testing.B) {
	runEngines(b, func(b *testing.B, t *target) {
		v := vllmOn(b, t, "vllm-store")
		data := vllmCPU()
		first := int(engineSeq.Add(int64(b.N))) - b.N
		b.SetBytes(bigBlock)
		b.ResetTimer()
		parallel(b, b.N, func(i int) error { return v.Store(first+i, data) })
		b.StopTimer()
		paths := make([]string, b.N)
		for i := range paths {
			paths[i] = v.Path(first + i)
		}
		t.dropBatch(b, paths)
	})
}

// BenchmarkVLLMLoad2MiB times vLLM's load_block (O_DIRECT open, one
// readv of 2 MiB into the CPU tier) by 4 threads over 32 blocks stored
// once (and written back on a mount) before the timing.
func BenchmarkVLLMLoad2MiB(b *testing.B) {
	runEngines(b, func(b *testing.B, t *target) {
		v := vllmOn(b, t, "vllm-load")
		if _, loaded := engineRoots.LoadOrStore(t.name+"/vllm-load-set", ""); !loaded {
			data := vllmCPU()
			parallel(b, readSet, func(i int) error { return v.Store(i, data) })
			if t.mounted() {
				if err := t.d.waitWriteBack(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.SetBytes(bigBlock)
		b.ResetTimer()
		parallel(b, b.N, func(i int) error {
			view := vllmViews.Get().(*[]byte)
			defer vllmViews.Put(view)
			return v.LoadInto(i%readSet, *view)
		})
	})
}

// sglangOn is SGLang's file backend over name on t, set up.
func sglangOn(b *testing.B, t *target, name string) *engineproto.SGLangFile {
	s := &engineproto.SGLangFile{Root: engineRoot(b, t, name), Salt: "bench", Model: "m", TPSize: 1}
	if err := s.Setup(); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkSGLangExistsFlat times SGLang's exists (a stat) of pages of a
// flat directory of 10^5, by 4 threads; the directory is filled once.
func BenchmarkSGLangExistsFlat(b *testing.B) {
	runEngines(b, func(b *testing.B, t *target) {
		s := sglangOn(b, t, "sglang-flat")
		if _, loaded := engineRoots.LoadOrStore(t.name+"/sglang-flat-set", ""); !loaded {
			page := newBlock(pageSize).buf
			parallel(b, flatPages, func(i int) error { return s.Store(i, page) })
		}
		b.ResetTimer()
		parallel(b, b.N, func(i int) error {
			_, err := s.Exists((i * 7919) % flatPages)
			return err
		})
	})
}

// BenchmarkSGLangClear10k times SGLang's clear() (list the directory,
// stat and remove every file) of a flat directory of 10^4 pages, filled
// before the timing and on disk by then: on a mount written back to its
// tier, on the plain directory synced (syncfs), as the kernel's flusher
// would have within its 30 s. (An ext4 file still in delayed allocation,
// never written out, unlinks about 8x faster than one on disk: a baseline
// of unwritten pages would time a state no page of a cache in service is
// in.)
func BenchmarkSGLangClear10k(b *testing.B) {
	runEngines(b, func(b *testing.B, t *target) {
		s := sglangOn(b, t, "sglang-clear")
		page := newBlock(pageSize).buf
		for range b.N {
			b.StopTimer()
			first := int(engineSeq.Add(clearPages)) - clearPages
			parallel(b, clearPages, func(i int) error { return s.Store(first+i, page) })
			if err := onDisk(t, s.Root); err != nil { // as in service: the pages were written long ago
				b.Fatal(err)
			}
			b.StartTimer()
			if err := s.Clear(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// onDisk waits until what was written under root is on disk: on a mount,
// its write-back to the tier; on a plain directory, syncfs of its
// filesystem.
func onDisk(t *target, root string) error {
	if t.mounted() {
		return t.d.waitWriteBack()
	}
	f, err := os.Open(root)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
