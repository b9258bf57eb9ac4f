// Command testprogress runs `go test -json` with the arguments it is
// given and prints, for `make test`, each package as it finishes (its
// time, and the output of its failing tests), and every -every a line
// naming the packages still running, how many of their tests have ended
// of how many they declare, and for how long they have run: a suite of
// ten minutes says what it does while it runs. It exits with go test's
// status.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// event is a line of `go test -json` (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	// ImportPath names the package of a build-output event.
	ImportPath string
}

// pkgRun is what is known of one package while it runs.
type pkgRun struct {
	start  time.Time
	total  int // top-level tests its files declare (0: unknown)
	ended  int // top-level tests ended
	failed []string
	output map[string]*strings.Builder // each test's output, for a failure
}

// text is what test (or the package, for "") printed.
func (r *pkgRun) text(test string) string {
	if b := r.output[test]; b != nil {
		return b.String()
	}
	return ""
}

// progress turns events into the lines `make test` prints.
type progress struct {
	out     io.Writer
	module  string               // the module path, stripped from package names
	count   func(pkg string) int // the top-level tests pkg declares
	running map[string]*pkgRun   // by import path
	order   []string             // running packages, in start order
	tests   int                  // tests ended in all
	skipped int
	fails   []string // "pkg.Test" of every failure
}

// name is pkg as the lines show it: its path within the module.
func (p *progress) name(pkg string) string {
	if n := strings.TrimPrefix(strings.TrimPrefix(pkg, p.module), "/"); n != "" {
		return n
	}
	return pkg
}

// add applies one event at time now.
func (p *progress) add(e event, now time.Time) {
	if e.Action == "build-output" {
		fmt.Fprint(p.out, e.Output)
		return
	}
	if e.Package == "" {
		return
	}
	r := p.running[e.Package]
	if r == nil {
		if e.Action != "start" && e.Action != "run" && e.Action != "output" {
			return
		}
		r = &pkgRun{start: now, total: p.count(e.Package), output: map[string]*strings.Builder{}}
		p.running[e.Package] = r
		p.order = append(p.order, e.Package)
	}
	top := e.Test != "" && !strings.Contains(e.Test, "/")
	switch e.Action {
	case "output":
		b := r.output[e.Test]
		if b == nil {
			b = &strings.Builder{}
			r.output[e.Test] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			p.finish(e, r)
			return
		}
		if top {
			r.ended++
			p.tests++
		}
		if e.Action == "skip" && top {
			p.skipped++
		}
		if e.Action == "fail" {
			r.failed = append(r.failed, e.Test)
			p.fails = append(p.fails, p.name(e.Package)+"."+e.Test)
		}
		if e.Action == "pass" {
			delete(r.output, e.Test)
		}
	}
}

// finish prints a package's line, and its failing tests' output.
func (p *progress) finish(e event, r *pkgRun) {
	delete(p.running, e.Package)
	p.order = slices.DeleteFunc(p.order, func(s string) bool { return s == e.Package })
	if e.Action == "skip" && r.ended == 0 && strings.Contains(r.text(""), "[no test files]") {
		return // nothing to say
	}
	mark := "✓ "
	if e.Action == "fail" {
		mark = "✖ "
	}
	fmt.Fprintf(p.out, "%s %s (%.1fs)\n", mark, p.name(e.Package), e.Elapsed)
	if e.Action != "fail" {
		return
	}
	for _, t := range r.failed {
		fmt.Fprint(p.out, r.text(t))
	}
	if len(r.failed) == 0 { // failed outside a test (build, panic, timeout)
		fmt.Fprint(p.out, r.text(""))
	}
}

// tick prints the packages still running: tests ended of tests declared,
// time so far.
func (p *progress) tick(now time.Time) {
	if len(p.order) == 0 {
		return
	}
	var parts []string
	for _, pkg := range p.order {
		r := p.running[pkg]
		done := fmt.Sprint(r.ended)
		if r.total > 0 {
			done = fmt.Sprintf("%d/%d", r.ended, r.total)
		}
		parts = append(parts, fmt.Sprintf("%s %s tests, %s", p.name(pkg), done, now.Sub(r.start).Round(time.Second)))
	}
	fmt.Fprintf(p.out, "   running: %s\n", strings.Join(parts, "; "))
}

// summary is the last lines: tests and time, the failed tests, then the
// counts in the plain form CI reads ("tests: N passed, N failed, N
// skipped", alone on the last line).
func (p *progress) summary(d time.Duration) string {
	s := fmt.Sprintf("DONE %d tests in %s", p.tests, d.Round(time.Second))
	if len(p.fails) > 0 {
		s += "\nfailed: " + strings.Join(p.fails, " ")
	}
	passed := max(p.tests-p.skipped-len(p.fails), 0)
	return s + fmt.Sprintf("\ntests: %d passed, %d failed, %d skipped", passed, len(p.fails), p.skipped)
}

// decode reads events from r into ch, then closes it; a line that is not
// an event (go test's own messages) is printed to out as it is.
func decode(r io.Reader, out io.Writer, ch chan<- event) {
	defer close(ch)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(out, sc.Text())
			continue
		}
		ch <- e
	}
	io.Copy(io.Discard, r) // a line past the buffer: keep go test from blocking
}
