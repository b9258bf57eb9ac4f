package gpu

import (
	"os"
	"strconv"
	"testing"

	"github.com/ucmfs/ucmfs/internal/engine"
)

// engineProc is the test's handle on an engine process: engine.Proc,
// with the RegionSpec its ready line describes and test failures instead
// of errors.
type engineProc struct {
	*engine.Proc
	t    testing.TB
	spec RegionSpec
	uuid string // the engine's GPU (CUDA)
	size int64
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
	dir := shmDir(t)
	p, err := engine.Start(exe, t.TempDir(), nil, append([]string{
		engine.EnvKind + "=" + kind, engine.EnvSize + "=" + strconv.FormatInt(size, 10),
		engine.EnvDir + "=" + dir, engine.EnvLib + "=" + lib, "FAKECUDA_DIR=" + dir}, env...)...)
	if err != nil {
		t.Fatal(err)
	}
	e := &engineProc{Proc: p, t: t, uuid: p.UUID, size: p.Size}
	e.spec = RegionSpec{Path: p.Path, Handle: []byte(p.Handle), Size: p.Size}
	if p.Handle == "" {
		e.spec.Handle = nil
	}
	t.Cleanup(e.stop)
	return e
}

// wrote records writes the test made into the engine's memory.
func (e *engineProc) wrote(ws ...write) { e.Wrote(ws...) }

// verify asks the engine to check every byte of its memory: the recorded
// writes where they landed, the guard bytes everywhere else.
func (e *engineProc) verify(what string) {
	e.t.Helper()
	if err := e.Verify(); err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// fill makes the engine write blockData(seed, n) at off itself.
func (e *engineProc) fill(off int64, n int, seed uint64) {
	e.t.Helper()
	if err := e.Fill(off, n, seed); err != nil {
		e.t.Fatal(err)
	}
}

// stop ends the engine, which frees its memory.
func (e *engineProc) stop() {
	if err := e.Quit(); err != nil {
		e.t.Error(err)
	}
}

// die makes the engine exit at once, freeing nothing, and waits for it
// (so the driver sees the owner gone).
func (e *engineProc) die() {
	e.t.Helper()
	if err := e.Die(); err != nil {
		e.t.Fatal(err)
	}
}
