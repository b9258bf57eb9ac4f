package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/gpu/fdpass"
	"github.com/ucmfs/ucmfs/internal/engine"
)

// receiveFD accepts one connection on l and returns the file it carries,
// answering as the daemon does ("ok token=1").
func receiveFD(l *fdpass.Listener) (*os.File, error) {
	c, err := l.Accept()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	buf := make([]byte, fdpass.MaxMessage)
	n, files, err := c.Recv(buf)
	if err != nil || len(files) != 1 {
		return nil, fmt.Errorf("receive the engine's fd: %q, %d files, %v", buf[:n], len(files), err)
	}
	return files[0], c.Send([]byte("ok token=1\n"))
}

// vmmEngine starts an engine of kind whose memory fd comes over a socket.
func vmmEngine(t *testing.T, kind string, size int64, lib string, env ...string) (*engineProc, *os.File) {
	t.Helper()
	l, err := fdpass.Listen(filepath.Join(t.TempDir(), "gpu.sock"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type got struct {
		f   *os.File
		err error
	}
	ch := make(chan got, 1)
	go func() { // the engine waits for the answer before it says ready
		f, err := receiveFD(l)
		ch <- got{f, err}
	}()
	e := startEngine(t, kind, size, lib, append(env, engine.EnvSocket+"="+l.Path())...)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.f.Close() })
	return e, r.f
}

// TestFakeCUDAVMMAcrossProcesses: an engine allocates VMM memory (as
// PyTorch's expandable segments do), passes its POSIX fd over a Unix
// socket, and the daemon maps it: copies at an offset land where they
// should; the fd may be closed once the region is open. Memory on another
// GPU than named is refused.
func TestFakeCUDAVMMAcrossProcesses(t *testing.T) {
	d, fc := openFakeWith(t, Config{})
	lib := fakeCUDA(t)
	e, f := vmmEngine(t, "vmm", 256<<10, lib, "FAKECUDA_VISIBLE_DEVICES=1")
	spec := RegionSpec{FD: f, AllocSize: e.size, Offset: 4096, Size: 64 << 10, DeviceUUID: e.uuid}
	r, err := d.OpenRegion(spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.(*cudaRegion).c.ord != 1 {
		t.Fatalf("VMM region on cuda:%d, want cuda:1", r.(*cudaRegion).c.ord)
	}
	if err := r.CopyIn(100, blockData(3, 5000)); err != nil {
		t.Fatal(err)
	}
	e.wrote(write{Off: 4196, Len: 5000, Seed: 3})
	e.verify("after a copy into VMM memory")
	got := make([]byte, 5000)
	if err := r.CopyOut(100, got); err != nil || firstDiff(got, blockData(3, 5000)) != "" {
		t.Fatalf("CopyOut from VMM memory: %v", err)
	}
	if err := r.CopyIn(spec.Size, []byte{1}); !errors.Is(err, ErrBounds) {
		t.Errorf("copy past the region: %v", err)
	}
	wrong := spec
	wrong.DeviceUUID, wrong.DeviceIndex = "", 0
	if _, err := d.OpenRegion(wrong); !errors.Is(err, ErrWrongDevice) {
		t.Errorf("VMM memory of cuda:1 named as cuda:0: %v, want ErrWrongDevice", err)
	}
	tooBig := spec
	tooBig.Size = e.size
	if _, err := d.OpenRegion(tooBig); !errors.Is(err, ErrSize) {
		t.Errorf("a region past the allocation: %v, want ErrSize", err)
	}
	if _, err := d.OpenRegion(RegionSpec{FD: f, Handle: make([]byte, IPCHandleSize), Size: 1}); !errors.Is(err, ErrBadHandle) {
		t.Errorf("an fd and a handle: %v, want ErrBadHandle", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	e.verify("after Close")
	d.Close()
	if n := fc.live(); n != 0 {
		t.Fatalf("after Close the driver still holds %d objects", n)
	}
}

// TestSimFDAcrossProcesses: the simulated device takes the engine's
// shared-memory file as an fd passed over the socket, too.
func TestSimFDAcrossProcesses(t *testing.T) {
	dev, err := Open(Config{Mode: "sim", Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	e, f := vmmEngine(t, "sim", 64<<10, "")
	r, err := dev.OpenRegion(RegionSpec{FD: f, Offset: 1000, Size: 8000})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.CopyIn(0, blockData(4, 8000)); err != nil {
		t.Fatal(err)
	}
	e.wrote(write{Off: 1000, Len: 8000, Seed: 4})
	e.verify("after a copy through a passed fd")
}
