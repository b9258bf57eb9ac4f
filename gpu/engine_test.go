package gpu

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The engine process: the test binary re-executed with these variables. It
// plays an inference engine: it allocates device memory (a shared-memory
// file for the sim device, cuMemAlloc for a CUDA driver), fills it with
// guard bytes, prints "ready <spec>", then answers one line per command on
// stdin:
//
//	verify <plan file>     compare all its memory with the guard image
//	                       after the plan's writes: "ok" or "mismatch ..."
//	fill <off> <n> <seed>  write blockData(seed, n) at off itself: "ok"
//	quit                   free the memory and exit: "bye"
const (
	envEngine = "UCMFS_GPU_ENGINE" // "sim" or "cuda"
	envSize   = "UCMFS_GPU_SIZE"   // bytes of device memory
	envDir    = "UCMFS_GPU_DIR"    // sim: where to create the file
	envLib    = "UCMFS_GPU_LIB"    // cuda: driver library path
)

// write is one write into device memory: blockData(Seed, Len) at Off.
type write struct {
	Off  int64
	Len  int
	Seed uint64
}

// guardByte is the byte an untouched offset holds: a pattern that differs
// between neighbouring offsets, so a copy that lands shifted shows.
func guardByte(i int64) byte { return byte(i*131+i>>9*7) ^ 0x5a }

func guardImage(size int64) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = guardByte(int64(i))
	}
	return b
}

// blockData is the deterministic content of a write.
func blockData(seed uint64, n int) []byte {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

// expectedImage is memory after writes, applied in order over the guard.
func expectedImage(size int64, writes []write) []byte {
	b := guardImage(size)
	for _, w := range writes {
		copy(b[w.Off:], blockData(w.Seed, w.Len))
	}
	return b
}

// firstDiff describes the first differing byte, or "".
func firstDiff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d bytes, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Sprintf("mismatch at offset %d: got %#x want %#x", i, got[i], want[i])
		}
	}
	return ""
}

// engineMem is the engine's own access to its device memory.
type engineMem interface {
	spec() string // "path=<file>" or "handle=<hex>"
	write(off int64, b []byte) error
	read(off int64, b []byte) error
	free() error
}

func engineMain(kind string) int {
	size, err := strconv.ParseInt(os.Getenv(envSize), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
		return 2
	}
	var mem engineMem
	switch kind {
	case "sim":
		mem, err = newSimMem(os.Getenv(envDir), size)
	case "cuda":
		runtime.LockOSThread() // the engine's context is current on this thread
		mem, err = newCUDAMem(os.Getenv(envLib), size)
	default:
		err = fmt.Errorf("unknown engine kind %q", kind)
	}
	if err == nil {
		err = mem.write(0, guardImage(size))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
		return 2
	}
	fmt.Println("ready", mem.spec())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "verify":
			fmt.Println(engineVerify(mem, size, f[1]))
		case len(f) == 4 && f[0] == "fill":
			off, _ := strconv.ParseInt(f[1], 10, 64)
			n, _ := strconv.Atoi(f[2])
			seed, _ := strconv.ParseUint(f[3], 10, 64)
			if err := mem.write(off, blockData(seed, n)); err != nil {
				fmt.Println("error", err)
				continue
			}
			fmt.Println("ok")
		case len(f) == 1 && f[0] == "quit":
			if err := mem.free(); err != nil {
				fmt.Println("error", err)
				return 1
			}
			fmt.Println("bye")
			return 0
		default:
			fmt.Println("error: bad command", f)
		}
	}
	mem.free()
	return 1
}

func engineVerify(mem engineMem, size int64, planFile string) string {
	data, err := os.ReadFile(planFile)
	if err != nil {
		return "error " + err.Error()
	}
	var writes []write
	if err := json.Unmarshal(data, &writes); err != nil {
		return "error " + err.Error()
	}
	got := make([]byte, size)
	if err := mem.read(0, got); err != nil {
		return "error " + err.Error()
	}
	if d := firstDiff(got, expectedImage(size, writes)); d != "" {
		return d
	}
	return "ok"
}

// simMem is a shared-memory file the engine created, sized and mapped.
type simMem struct {
	path string
	mem  []byte
}

func newSimMem(dir string, size int64) (*simMem, error) {
	p := filepath.Join(dir, "engine-memory")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &simMem{path: p, mem: mem}, nil
}

func (m *simMem) spec() string                    { return "path=" + m.path }
func (m *simMem) write(off int64, b []byte) error { copy(m.mem[off:], b); return nil }
func (m *simMem) read(off int64, b []byte) error  { copy(b, m.mem[off:]); return nil }
func (m *simMem) free() error {
	if err := unix.Munmap(m.mem); err != nil {
		return err
	}
	return os.Remove(m.path)
}

// quietLog is a logger that drops everything.
func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// encodeHandle is the hex form of an IPC handle, as an engine sends it.
func encodeHandle(h ipcHandle) string { return hex.EncodeToString(h.Reserved[:]) }
