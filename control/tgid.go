package control

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The process of a thread: the kernel names the thread that sent a
// request; rules about who wrote a file or who may use a control file
// need its process (thread group).

// tgidCache remembers the thread group of the threads seen (every request
// asks for it: reading /proc/<tid>/status each time cost ~20 µs). An entry
// is checked before use by the existence of /proc/<tgid>/task/<tid>: a
// thread id reused by another process fails it. The map is emptied when
// it grows past tgidCacheMax.
var tgidCache struct {
	sync.Mutex
	m map[uint32]uint32
}

const tgidCacheMax = 1 << 16

// Tgid returns the thread group (process) of thread tid; 0 when it
// cannot be found (the thread is gone).
func Tgid(tid uint32) uint32 {
	if tid == 0 {
		return 0
	}
	tgidCache.Lock()
	tg, ok := tgidCache.m[tid]
	tgidCache.Unlock()
	if ok && taskExists(tg, tid) {
		return tg
	}
	tg = readTgid(tid)
	if tg != 0 {
		tgidCache.Lock()
		if tgidCache.m == nil || len(tgidCache.m) >= tgidCacheMax {
			tgidCache.m = make(map[uint32]uint32)
		}
		tgidCache.m[tid] = tg
		tgidCache.Unlock()
	}
	return tg
}

// taskExists reports whether /proc/<tg>/task/<tid> exists: thread tid
// is still one of process tg. The path is built on the stack and given
// to faccessat(2) as it is: Tgid's cached answer allocates nothing.
func taskExists(tg, tid uint32) bool {
	var buf [40]byte // "/proc/" + 10 digits + "/task/" + 10 digits + NUL
	p := append(buf[:0], "/proc/"...)
	p = strconv.AppendUint(p, uint64(tg), 10)
	p = append(p, "/task/"...)
	p = strconv.AppendUint(p, uint64(tid), 10)
	p = append(p, 0)
	_, _, e := unix.Syscall6(unix.SYS_FACCESSAT, atFDCWD, uintptr(unsafe.Pointer(&p[0])), unix.F_OK, 0, 0, 0)
	return e == 0
}

// atFDCWD is AT_FDCWD as a system call's argument.
var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }()

// readTgid reads the thread group of thread tid from /proc/<tid>/status.
func readTgid(tid uint32) uint32 {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("Tgid:")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 32)
			if err != nil {
				return 0
			}
			return uint32(n)
		}
	}
	return 0
}
