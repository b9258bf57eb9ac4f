package main

import (
	"strings"
	"testing"
	"time"
)

// stream is `go test -json` of three packages: one passes, one has no
// test files, one fails a test while another of its tests still runs;
// and a line of go test's own.
const stream = `{"Action":"start","Package":"m/fs"}
{"Action":"start","Package":"m/integration"}
{"Action":"run","Package":"m/fs","Test":"TestA"}
{"Action":"output","Package":"m/fs","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"m/fs","Test":"TestA","Elapsed":0.1}
{"Action":"run","Package":"m/integration","Test":"TestX"}
{"Action":"output","Package":"m/integration","Test":"TestX","Output":"    x_test.go:9: boom\n"}
{"Action":"fail","Package":"m/integration","Test":"TestX","Elapsed":1}
{"Action":"run","Package":"m/integration","Test":"TestY"}
{"Action":"run","Package":"m/integration","Test":"TestY/sub"}
{"Action":"pass","Package":"m/integration","Test":"TestY/sub","Elapsed":1}
go: a message of go test's own
{"Action":"pass","Package":"m/fs","Elapsed":26.04}
{"Action":"start","Package":"m/internal/doc"}
{"Action":"output","Package":"m/internal/doc","Output":"?   \tm/internal/doc\t[no test files]\n"}
{"Action":"skip","Package":"m/internal/doc","Elapsed":0}
TICK
{"Action":"skip","Package":"m/integration","Test":"TestY","Elapsed":1}
{"Action":"fail","Package":"m/integration","Elapsed":70.5}
`

// TestProgress: a line per package as it ends (none for no test files),
// a failing test's output under its package, the packages still running
// with their tests ended of declared at each tick, and the summary.
func TestProgress(t *testing.T) {
	var out strings.Builder
	p := &progress{out: &out, module: "m", running: map[string]*pkgRun{},
		count: func(pkg string) int { return map[string]int{"m/fs": 1, "m/integration": 3}[pkg] }}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, part := range strings.Split(stream, "TICK\n") {
		events := make(chan event)
		go decode(strings.NewReader(part), &out, events)
		for e := range events {
			p.add(e, t0)
		}
		if i == 0 {
			p.tick(t0.Add(95 * time.Second))
		}
	}
	out.WriteString(p.summary(71 * time.Second))
	want := `go: a message of go test's own
✓  fs (26.0s)
   running: integration 1/3 tests, 1m35s
✖  integration (70.5s)
    x_test.go:9: boom
DONE 3 tests in 1m11s
failed: integration.TestX
tests: 1 passed, 1 failed, 1 skipped`
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
