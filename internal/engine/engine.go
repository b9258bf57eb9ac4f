// Package engine plays an inference engine against ucmfs's GPU path, in
// a process of its own: it allocates device memory through the CUDA
// driver (the real libcuda, or the stand-in of gpu/testdata) on the GPU
// it is given, exports it as an engine does (the IPC handle of a
// segment's base, tensors at offsets inside it; or a VMM allocation's
// POSIX fd, passed over a Unix socket), lays a KV cache out per layer
// (KVLayout), checks what the daemon copied into it, and can die at any
// moment, mid-load included. A simulated-device engine (a shared-memory
// file) speaks the same protocol.
//
// Main is the whole process: a test binary (or any command) calls it
// when the environment says so; it prints one "ready" line describing
// its memory (with the token the daemon's GPU socket gave for its fd,
// when it sent one), then answers one line per command on stdin:
//
//	verify <plan file>     compare all of its memory with the guard image
//	                       after the plan's writes (JSON []Write): "ok" or
//	                       "mismatch ..."
//	fill <off> <n> <seed>  write Pattern(seed, n) at off itself: "ok"
//	die                    exit at once with status 3, freeing nothing (a crash)
//	quit                   free the memory and exit: "bye"
package engine

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/ucmfs/ucmfs/gpu/fdpass"
	"golang.org/x/sys/unix"
)

// Environment variables of Main.
const (
	EnvKind   = "UCMFS_ENGINE"        // "sim", "ipc" or "vmm"; Main runs when it is set
	EnvSize   = "UCMFS_ENGINE_SIZE"   // bytes of memory
	EnvDir    = "UCMFS_ENGINE_DIR"    // sim: where to create the file
	EnvLib    = "UCMFS_ENGINE_LIB"    // ipc, vmm: the driver library
	EnvDevice = "UCMFS_ENGINE_DEVICE" // ipc, vmm: the GPU ordinal in the engine's numbering (default 0)
	EnvSocket = "UCMFS_ENGINE_SOCKET" // vmm, sim: send the memory's fd here ("register <size>")
)

// memory is the engine's own access to its memory.
type memory interface {
	Write(off int64, b []byte) error
	Read(off int64, b []byte) error
	Free() error
}

// Main runs the engine described by the environment (getenv) with the
// given command stream and returns the exit status.
func Main(getenv func(string) string, in io.Reader, out io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "engine:", err)
		return 2
	}
	size, err := strconv.ParseInt(getenv(EnvSize), 10, 64)
	if err != nil {
		return fail(err)
	}
	var mem memory
	var ready string
	var fd *os.File
	switch kind := getenv(EnvKind); kind {
	case "sim":
		var m *simMem
		m, err = newSimMem(getenv(EnvDir), size)
		if err == nil {
			mem, fd, ready = m, m.f, "path="+m.path
		}
	case "ipc", "vmm":
		runtime.LockOSThread() // the context is current on this thread
		ord, _ := strconv.Atoi(orZero(getenv(EnvDevice)))
		var d *Driver
		if d, err = OpenDriver(getenv(EnvLib), ord); err != nil {
			return fail(err)
		}
		var s *Segment
		if kind == "ipc" {
			s, err = d.AllocIPC(size)
		} else {
			s, err = d.AllocVMM(size)
		}
		if err == nil {
			mem, fd, size = s, s.FD(), s.Size
			ready = "uuid=" + d.UUID()
			if h := s.IPCHandle(); h != "" {
				ready += " handle=" + h
			}
		}
	default:
		err = fmt.Errorf("unknown engine kind %q", kind)
	}
	if err == nil {
		err = mem.Write(0, GuardImage(size))
	}
	if err == nil && fd != nil && getenv(EnvSocket) != "" {
		var token string
		if token, err = sendFD(getenv(EnvSocket), fd, size); err == nil {
			ready += " fd=sent"
			if token != "" {
				ready += " token=" + token
			}
		}
	}
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(out, "ready size=%d %s\n", size, ready)
	return serve(mem, size, in, out)
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// sendFD passes the memory's fd to the daemon's socket ("register
// <size>") and returns the token of its answer ("ok token=N"), for
// "register vmm N ..." on .ucm/gpu; "" when the peer closed without
// answering.
func sendFD(path string, f *os.File, size int64) (string, error) {
	c, err := fdpass.Dial(path)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.Send([]byte("register "+strconv.FormatInt(size, 10)), f); err != nil {
		return "", err
	}
	buf := make([]byte, fdpass.MaxMessage)
	n, files, err := c.Recv(buf)
	for _, f := range files {
		f.Close()
	}
	if errors.Is(err, syscall.ECONNRESET) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	answer := strings.TrimSpace(string(buf[:n]))
	token, ok := strings.CutPrefix(answer, "ok token=")
	if !ok {
		return "", fmt.Errorf("the socket answered %q", answer)
	}
	return token, nil
}

// serve answers commands until quit, die or the end of the input.
func serve(mem memory, size int64, in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "verify":
			fmt.Fprintln(out, verify(mem, size, f[1]))
		case len(f) == 4 && f[0] == "fill":
			off, _ := strconv.ParseInt(f[1], 10, 64)
			n, _ := strconv.Atoi(f[2])
			seed, _ := strconv.ParseUint(f[3], 10, 64)
			if err := mem.Write(off, Pattern(seed, n)); err != nil {
				fmt.Fprintln(out, "error", err)
				continue
			}
			fmt.Fprintln(out, "ok")
		case len(f) == 1 && f[0] == "die":
			os.Exit(3)
		case len(f) == 1 && f[0] == "quit":
			if err := mem.Free(); err != nil {
				fmt.Fprintln(out, "error", err)
				return 1
			}
			fmt.Fprintln(out, "bye")
			return 0
		default:
			fmt.Fprintln(out, "error: bad command", f)
		}
	}
	mem.Free()
	return 1
}

func verify(mem memory, size int64, planFile string) string {
	data, err := os.ReadFile(planFile)
	if err != nil {
		return "error " + err.Error()
	}
	var writes []Write
	if err := json.Unmarshal(data, &writes); err != nil {
		return "error " + err.Error()
	}
	got := make([]byte, size)
	if err := mem.Read(0, got); err != nil {
		return "error " + err.Error()
	}
	if d := FirstDiff(got, Image(size, writes)); d != "" {
		return d
	}
	return "ok"
}

// simMem is a shared-memory file the engine created, sized and mapped.
type simMem struct {
	path string
	f    *os.File
	mem  []byte
}

func newSimMem(dir string, size int64) (*simMem, error) {
	p := filepath.Join(dir, "engine-memory")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, err
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &simMem{path: p, f: f, mem: mem}, nil
}

func (m *simMem) Write(off int64, b []byte) error { copy(m.mem[off:], b); return nil }
func (m *simMem) Read(off int64, b []byte) error  { copy(b, m.mem[off:]); return nil }
func (m *simMem) Free() error {
	m.f.Close()
	if err := unix.Munmap(m.mem); err != nil {
		return err
	}
	return os.Remove(m.path)
}
