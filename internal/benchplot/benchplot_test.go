package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleOutput is `go test -bench` output of package bench, three rounds
// of one benchmark, with -v noise around it.
const sampleOutput = `goos: linux
=== RUN   TestScale
BenchmarkMountRead2MiB
BenchmarkMountRead2MiB/passthrough
BenchmarkMountRead2MiB/passthrough-2   3676   400000 ns/op   5000.00 MB/s
BenchmarkMountRead2MiB/passthrough#01-2   3459   300000 ns/op   7000.00 MB/s
BenchmarkMountRead2MiB/passthrough#02-2   3459   350000 ns/op   6000.00 MB/s
BenchmarkMountRead2MiB/tmpfs-2         7935   175000 ns/op  12000.00 MB/s
BenchmarkMountStatMiss/passthrough-2   71656   25000 ns/op   40000 stats/s
BenchmarkMountStatMiss/fallback-2      54942   40000 ns/op   25000 stats/s
BenchmarkMountStatMiss/tmpfs-2        447992    2500 ns/op  400000 stats/s
BenchmarkOther-2                        100     1000 ns/op
PASS
`

func TestParseBench(t *testing.T) {
	r, err := parseBench(strings.NewReader(sampleOutput))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := r.get("Read2MiB", "passthrough")
	if !ok || s.nsPerOp != 350000 || s.mbPerS != 6000 || s.runs != 3 {
		t.Errorf("Read2MiB/passthrough = %+v, want the medians 350000 ns/op, 6000 MB/s of 3 runs", s)
	}
	if x, ok := r.ratio("Read2MiB", "passthrough"); !ok || x != 0.5 {
		t.Errorf("ratio = %v, %v; want 0.5", x, ok)
	}
	if _, ok := r.get("Write2MiB", "passthrough"); ok {
		t.Error("a benchmark that did not run has a result")
	}
	if _, ok := r["Other"]; ok {
		t.Error("a benchmark outside package bench was kept")
	}
	got := map[string]string{}
	for _, v := range verdicts(r, nil) {
		got[v.what] = v.status()
	}
	for what, want := range map[string]string{
		"read, resident in memory, passthrough":   "MISSED",
		"write, sustained, passthrough":           "not measured",
		"stat of misses, passthrough, one thread": "holds",
		"stat of misses, fallback, one thread":    "MISSED",
	} {
		if got[what] != want {
			t.Errorf("%s: %q, want %q", what, got[what], want)
		}
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in, scale := filepath.Join(dir, "mount.txt"), filepath.Join(dir, "scale.json")
	if err := os.WriteFile(in, []byte(sampleOutput), 0o644); err != nil {
		t.Fatal(err)
	}
	sr := scaleResult{Blocks: 100000, BlockBytes: 4096, DuCold: 1.5, Restart: 0.4, RSSReady: 50 << 20,
		RSSAfterDu: 200 << 20, RSSLimit: 100<<20 + 200*100000}
	data, _ := json.Marshal(sr)
	if err := os.WriteFile(scale, data, 0o644); err != nil {
		t.Fatal(err)
	}
	pngPath, md := filepath.Join(dir, "out.png"), filepath.Join(dir, "out.md")
	var out bytes.Buffer
	if err := run([]string{"-bench", in, "-scale", scale, "-png", pngPath, "-md", md}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"6.00 GB/s (0.50x)", "12.00 GB/s", "40.0k/s (0.10x)",
		"du -s of the model (first after restart)  1.50 s", "daemon VmRSS after du -s twice            200.0 MiB"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	mdText, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(mdText), "| read, resident in memory, passthrough | 0.50x | >= 0.95x tmpfs | MISSED |") {
		t.Errorf("markdown (%v):\n%s", err, mdText)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != heightTop+heightBot {
		t.Errorf("picture is %v, want %dx%d", b, width, heightTop+heightBot)
	}
}

func TestRunWithoutResults(t *testing.T) {
	in := filepath.Join(t.TempDir(), "mount.txt")
	os.WriteFile(in, []byte("--- SKIP: no FUSE here\n"), 0o644)
	pngPath := filepath.Join(t.TempDir(), "out.png")
	var out bytes.Buffer
	if err := run([]string{"-bench", in, "-png", pngPath}, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pngPath); err == nil {
		t.Error("a picture was written without results")
	}
}
