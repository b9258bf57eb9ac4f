package gpu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// engine is the test's handle on an engine process (see engine_test.go).
type engine struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	spec   RegionSpec
	size   int64
	writes []write // every write made to its memory, in order
	dir    string
}

// startEngine starts an engine process with size bytes of memory of the
// given kind ("sim", or "cuda" with the driver library lib).
func startEngine(t *testing.T, kind string, size int64, lib string) *engine {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{t: t, size: size, dir: shmDir(t)}
	e.cmd = exec.Command(exe)
	e.cmd.Env = append(os.Environ(),
		envEngine+"="+kind, envSize+"="+strconv.FormatInt(size, 10),
		envDir+"="+e.dir, envLib+"="+lib, "FAKECUDA_DIR="+e.dir)
	e.cmd.Stderr = &e.stderr
	if e.in, err = e.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := e.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e.out = bufio.NewReader(stdout)
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	ready := e.readLine()
	spec, ok := strings.CutPrefix(ready, "ready ")
	switch {
	case !ok:
		t.Fatalf("engine: %q", ready)
	case strings.HasPrefix(spec, "path="):
		e.spec = RegionSpec{Path: strings.TrimPrefix(spec, "path="), Size: size}
	case strings.HasPrefix(spec, "handle="):
		e.spec = RegionSpec{Handle: []byte(strings.TrimPrefix(spec, "handle=")), Size: size}
	default:
		t.Fatalf("engine: unknown spec %q", spec)
	}
	return e
}

func (e *engine) readLine() string {
	e.t.Helper()
	line, err := e.out.ReadString('\n')
	if err != nil {
		e.t.Fatalf("engine: %v (stderr: %s)", err, e.stderr.String())
	}
	return strings.TrimSuffix(line, "\n")
}

func (e *engine) call(format string, args ...any) string {
	e.t.Helper()
	if _, err := fmt.Fprintf(e.in, format+"\n", args...); err != nil {
		e.t.Fatalf("engine: %v (stderr: %s)", err, e.stderr.String())
	}
	return e.readLine()
}

// wrote records writes the test made into the engine's memory.
func (e *engine) wrote(ws ...write) { e.writes = append(e.writes, ws...) }

// verify asks the engine to check every byte of its memory: the recorded
// writes where they landed, the guard bytes everywhere else.
func (e *engine) verify(what string) {
	e.t.Helper()
	data, err := json.Marshal(e.writes)
	if err != nil {
		e.t.Fatal(err)
	}
	plan := filepath.Join(e.t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
	if got := e.call("verify %s", plan); got != "ok" {
		e.t.Fatalf("%s: engine sees %s", what, got)
	}
}

// fill makes the engine write blockData(seed, n) at off itself.
func (e *engine) fill(off int64, n int, seed uint64) {
	e.t.Helper()
	if got := e.call("fill %d %d %d", off, n, seed); got != "ok" {
		e.t.Fatalf("engine fill: %s", got)
	}
	e.wrote(write{Off: off, Len: n, Seed: seed})
}

// stop ends the engine, which frees its memory.
func (e *engine) stop() {
	if e.cmd.ProcessState != nil {
		return
	}
	if _, err := fmt.Fprintln(e.in, "quit"); err == nil {
		if line, _ := e.out.ReadString('\n'); line != "bye\n" {
			e.t.Errorf("engine quit: %q (stderr: %s)", line, e.stderr.String())
		}
	}
	e.in.Close()
	if err := e.cmd.Wait(); err != nil {
		e.t.Errorf("engine exit: %v (stderr: %s)", err, e.stderr.String())
	}
}
