package gpu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/gpu/engine"
)

// engineProc is the test's handle on an engine process (package engine).
type engineProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	spec   RegionSpec
	uuid   string // the engine's GPU (CUDA)
	size   int64
	writes []write // every write made to its memory, in order
	dir    string
}

// startEngine starts an engine process with size bytes of memory of the
// given kind ("sim", "ipc" or "vmm", the last two with the driver library
// lib); env adds variables (engine.EnvDevice, FAKECUDA_VISIBLE_DEVICES,
// engine.EnvSocket).
func startEngine(t testing.TB, kind string, size int64, lib string, env ...string) *engineProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &engineProc{t: t, size: size, dir: shmDir(t)}
	e.cmd = exec.Command(exe)
	e.cmd.Env = append(os.Environ(),
		engine.EnvKind+"="+kind, engine.EnvSize+"="+strconv.FormatInt(size, 10),
		engine.EnvDir+"="+e.dir, engine.EnvLib+"="+lib, "FAKECUDA_DIR="+e.dir)
	e.cmd.Env = append(e.cmd.Env, env...)
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
	fields := strings.Fields(ready)
	if len(fields) < 2 || fields[0] != "ready" {
		t.Fatalf("engine: %q", ready)
	}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "size":
			e.size, _ = strconv.ParseInt(v, 10, 64)
		case "path":
			e.spec.Path = v
		case "handle":
			e.spec.Handle = []byte(v)
		case "uuid":
			e.uuid = v
		}
	}
	e.spec.Size = e.size
	return e
}

func (e *engineProc) readLine() string {
	e.t.Helper()
	line, err := e.out.ReadString('\n')
	if err != nil {
		e.t.Fatalf("engine: %v (stderr: %s)", err, e.stderr.String())
	}
	return strings.TrimSuffix(line, "\n")
}

func (e *engineProc) call(format string, args ...any) string {
	e.t.Helper()
	if _, err := fmt.Fprintf(e.in, format+"\n", args...); err != nil {
		e.t.Fatalf("engine: %v (stderr: %s)", err, e.stderr.String())
	}
	return e.readLine()
}

// wrote records writes the test made into the engine's memory.
func (e *engineProc) wrote(ws ...write) { e.writes = append(e.writes, ws...) }

// verify asks the engine to check every byte of its memory: the recorded
// writes where they landed, the guard bytes everywhere else.
func (e *engineProc) verify(what string) {
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
func (e *engineProc) fill(off int64, n int, seed uint64) {
	e.t.Helper()
	if got := e.call("fill %d %d %d", off, n, seed); got != "ok" {
		e.t.Fatalf("engine fill: %s", got)
	}
	e.wrote(write{Off: off, Len: n, Seed: seed})
}

// stop ends the engine, which frees its memory.
func (e *engineProc) stop() {
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

// die makes the engine exit at once, freeing nothing, and waits for it
// (so the driver sees the owner gone).
func (e *engineProc) die() {
	e.t.Helper()
	fmt.Fprintln(e.in, "die")
	e.in.Close()
	err := e.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		e.t.Fatalf("engine die: %v (stderr: %s)", err, e.stderr.String())
	}
}
