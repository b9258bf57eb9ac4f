package fs

import (
	"os"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// lookupBatch is the number of ids per lookup request in the benchmarks.
const lookupBatch = 10_000

// lookupBench is a mount holding lookupBatch blocks, and a request list
// of lookupBatch ids of which every other one is present.
type lookupBench struct {
	m       *testMount
	present []format.Key // all stored
	mixed   []format.Key // half stored, half absent, interleaved
}

func newLookupBench(b *testing.B) *lookupBench {
	b.Helper()
	m := newMount(b, Options{Passthrough: true})
	lb := &lookupBench{m: m, present: putKeys(b, m.st, testModel, lookupBatch)}
	abs := absentKeys(testModel, lookupBatch/2)
	for i := 0; i < lookupBatch/2; i++ {
		lb.mixed = append(lb.mixed, lb.present[i], abs[i])
	}
	if err := m.st.FlushAll(b.Context(), ""); err != nil { // no write-back while timing
		b.Fatal(err)
	}
	return lb
}

// reportIDs reports the throughput in looked-up ids per second.
func reportIDs(b *testing.B) {
	b.ReportMetric(float64(b.N)*lookupBatch/b.Elapsed().Seconds(), "ids/s")
}

// BenchmarkLookup10k measures batch lookup of 10k ids per request
// through .ucm/lookup (a client in this process, through the kernel),
// against baselines in the same run: the same ids checked by
// tiers.Stack.HasBlock and Stack.Has directly (no FUSE), and by stat(2)
// through the mount (kernel entry cache warm after the first round).
func BenchmarkLookup10k(b *testing.B) {
	lb := newLookupBench(b)
	request := func(verb string, keys []format.Key) string {
		return verb + " " + testModel + " " + idList(keys) + "\n"
	}
	control := func(req, want string) func(b *testing.B) {
		return func(b *testing.B) {
			f, err := os.OpenFile(lb.m.path(".ucm", "lookup"), os.O_RDWR, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, 64<<10)
			b.SetBytes(int64(len(req)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := f.WriteString(req); err != nil {
					b.Fatal(err)
				}
				n, err := f.Read(buf)
				if err != nil || n == 0 || buf[n-1] != '\n' || !strings.HasPrefix(string(buf[:len(want)]), want) {
					b.Fatalf("answer %q, %v", clip(buf[:n]), err)
				}
			}
			reportIDs(b)
		}
	}
	b.Run("control-exists-mixed", control(request("exists", lb.mixed), "ok 5000 10"))
	b.Run("control-prefix-present", control(request("prefix", lb.present), "ok 10000\n"))
	b.Run("HasBlock-mixed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n := 0
			for _, k := range lb.mixed {
				if lb.m.st.HasBlock(k.Model, k.ID) {
					n++
				}
			}
			if n != lookupBatch/2 {
				b.Fatalf("%d present", n)
			}
		}
		reportIDs(b)
	})
	b.Run("Has-mixed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, k := range lb.mixed {
				lb.m.st.Has(k)
			}
		}
		reportIDs(b)
	})
	paths := make([]string, len(lb.mixed))
	for i, k := range lb.mixed {
		paths[i] = lb.m.keyPath(k)
	}
	b.Run("stat-mixed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, p := range paths {
				os.Stat(p)
			}
		}
		reportIDs(b)
	})
}

// BenchmarkControlOpen measures an open and close of a control session
// (a client that opens one per call, as the Python helpers do); the open
// captures the opener's credentials (line.Creds).
func BenchmarkControlOpen(b *testing.B) {
	m := newMount(b, Options{})
	path := m.path(".ucm", "lookup")
	for b.Loop() {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
