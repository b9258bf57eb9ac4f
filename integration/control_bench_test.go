package integration

import (
	"os"
	"strings"
	"testing"
)

// benchBatch is the number of ids per lookup request.
const benchBatch = 10_000

// BenchmarkControlLookup measures batch lookup through MNT/.ucm/lookup of
// the real daemon, a separate process, with 10k ids per request, reported
// in ids/s; the baseline in the same run is stat(2) of the same ids
// through the mount (the kernel's entry cache warm after the first round,
// misses cached for the default 1s negative TTL).
func BenchmarkControlLookup(b *testing.B) {
	d := mountUCM(b, mountOpts{Args: []string{"--memory", "256MiB"}})
	if err := os.Mkdir(d.path(ctlModel), 0o755); err != nil {
		b.Fatal(err)
	}
	present := testIDs("bench-present", benchBatch)
	absent := testIDs("bench-absent", benchBatch/2)
	for _, id := range present {
		if err := writeVerdict(blockPath(d.Mnt, ctlModel, id), goodBlock(id)); err != nil {
			b.Fatal(err)
		}
	}
	var mixed []string
	for i := range absent {
		mixed = append(mixed, present[i], absent[i])
	}
	f, err := os.OpenFile(d.path(".ucm", "lookup"), os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	ask := func(b *testing.B, req, want string) {
		if _, err := f.WriteString(req); err != nil {
			b.Fatal(err)
		}
		n, err := f.Read(buf)
		if err != nil || n < len(want) || string(buf[:len(want)]) != want || buf[n-1] != '\n' {
			b.Fatalf("answer %q, %v", buf[:min(n, 80)], err)
		}
	}
	fl, err := os.OpenFile(d.path(".ucm", "flush"), os.O_RDWR, 0) // no write-back while timing
	if err != nil {
		b.Fatal(err)
	}
	fl.WriteString("all\n")
	if n, err := fl.Read(buf); err != nil || string(buf[:n]) != "ok flushed\n" {
		b.Fatalf("flush: %q, %v", buf[:n], err)
	}
	fl.Close()
	run := func(name, req, want string) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(req)))
			for i := 0; i < b.N; i++ {
				ask(b, req, want)
			}
			b.ReportMetric(float64(b.N)*benchBatch/b.Elapsed().Seconds(), "ids/s")
		})
	}
	run("control-exists-mixed", "exists "+ctlModel+" "+strings.Join(mixed, " ")+"\n", "ok 5000 10")
	run("control-prefix-present", "prefix "+ctlModel+" "+strings.Join(present, " ")+"\n", "ok 10000\n")
	b.Run("stat-mixed", func(b *testing.B) {
		paths := make([]string, len(mixed))
		for i, id := range mixed {
			paths[i] = blockPath(d.Mnt, ctlModel, id)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for _, p := range paths {
				os.Stat(p)
			}
		}
		b.ReportMetric(float64(b.N)*benchBatch/b.Elapsed().Seconds(), "ids/s")
	})
}
