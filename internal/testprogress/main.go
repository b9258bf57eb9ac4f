package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// topTest is the line that declares a top-level test.
var topTest = regexp.MustCompile(`(?m)^func Test[A-Z0-9_]\w*\(\w+ \*testing\.T\)`)

// declared counts the top-level tests of the package in dir.
func declared(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			n += len(topTest.FindAll(b, -1))
		}
	}
	return n
}

// modulePath is the module line of ./go.mod.
func modulePath() string {
	f, err := os.Open("go.mod")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

func main() {
	every := flag.Duration("every", 30*time.Second, "how often to print the packages still running")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testprogress [-every D] [--] GO-TEST-ARGS... (run from the module root)")
	}
	flag.Parse()
	mod := modulePath()
	p := &progress{out: os.Stdout, module: mod, running: map[string]*pkgRun{},
		count: func(pkg string) int { return declared("./" + strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")) }}
	cmd := exec.Command("go", append([]string{"test", "-json"}, flag.Args()...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	events := make(chan event)
	go decode(stdout, os.Stdout, events)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case e, ok := <-events:
			if !ok {
				done = true
				break
			}
			p.add(e, time.Now())
		case now := <-tick.C:
			p.tick(now)
		}
	}
	err = cmd.Wait()
	fmt.Println(p.summary(time.Since(start)))
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
}
