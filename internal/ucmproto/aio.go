package ucmproto

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux native AIO (io_setup, io_submit, io_getevents), as UCM's aio
// engine uses it: one request per shard, on a descriptor opened O_DIRECT.

// iocb is struct iocb of linux/aio_abi.h (little-endian layout).
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   int32
	opcode    uint16
	reqprio   int16
	fd        uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const (
	iocbCmdPread  = 0
	iocbCmdPwrite = 1
)

// aioRW runs one read (write false) or write of buf at off on fd through
// its own AIO context and waits for it; it returns the bytes moved.
func aioRW(fd int, buf []byte, off int64, write bool) (int, error) {
	var ctx uintptr
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		return 0, fmt.Errorf("io_setup: %w", e)
	}
	defer unix.Syscall(unix.SYS_IO_DESTROY, ctx, 0, 0)
	cb := iocb{opcode: iocbCmdPread, fd: uint32(fd), buf: uint64(uintptr(unsafe.Pointer(&buf[0]))),
		nbytes: uint64(len(buf)), offset: off}
	if write {
		cb.opcode = iocbCmdPwrite
	}
	cbs := [1]*iocb{&cb}
	if n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, ctx, 1, uintptr(unsafe.Pointer(&cbs[0]))); e != 0 || n != 1 {
		return 0, fmt.Errorf("io_submit: %d, %w", n, e)
	}
	var ev ioEvent
	for {
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, ctx, 1, 1, uintptr(unsafe.Pointer(&ev)), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || n != 1 {
			return 0, fmt.Errorf("io_getevents: %d, %w", n, e)
		}
		break
	}
	if ev.res < 0 {
		return 0, fmt.Errorf("aio: %w", unix.Errno(-ev.res))
	}
	return int(ev.res), nil
}
