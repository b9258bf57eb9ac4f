// Package uring serves a FUSE connection over io_uring (FUSE_OVER_IO_URING,
// Linux 6.14 and later): the kernel hands each request to a ring entry the
// daemon registered for the CPU it was made on, and the daemon answers it
// and fetches the next one in a single io_uring_enter. The file system
// behind it is go-fuse's, unchanged: each request is decoded and answered by
// a fuse.ProtocolServer over the same fuse.RawFileSystem that the /dev/fuse
// loop serves. docs/design.md ("FUSE over io_uring") says how and why.
//
// ring.go is a minimal io_uring: one submission and one completion queue,
// 128-byte submission entries (IORING_SETUP_SQE128, which FUSE's commands
// need), mapped once and driven by one locked OS thread.
package uring

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// io_uring ABI constants (include/uapi/linux/io_uring.h).
const (
	setupCQSize  = 1 << 3  // IORING_SETUP_CQSIZE
	setupSQE128  = 1 << 10 // IORING_SETUP_SQE128
	featSingleMM = 1 << 0  // IORING_FEAT_SINGLE_MMAP
	enterGetEv   = 1 << 0  // IORING_ENTER_GETEVENTS
	opURingCmd   = 46      // IORING_OP_URING_CMD
	offSQRing    = 0
	offCQRing    = 0x8000000
	offSQEs      = 0x10000000
	sqeSize      = 128 // with IORING_SETUP_SQE128
	cqeSize      = 16
	sqeCmdOffset = 48 // the 80-byte command area of a 128-byte entry
)

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// ring is one io_uring instance. It is not safe for concurrent use: one
// goroutine, locked to its thread, submits and reaps.
type ring struct {
	fd          int
	sqMap       []byte // the submission ring (and, with a single mmap, the completion ring)
	cqMap       []byte
	sqes        []byte
	sqHead      *uint32
	sqTail      *uint32
	sqMask      uint32
	sqArray     unsafe.Pointer
	cqHead      *uint32
	cqTail      *uint32
	cqMask      uint32
	cqes        unsafe.Pointer
	pending     uint32 // entries written since the last wait
	unsubmitted uint32 // entries published to the kernel and not yet taken
	singleMap   bool   // the completion ring shares the submission ring's mapping
}

// newRing sets up an io_uring with entries submission slots of 128 bytes.
func newRing(entries uint32) (*ring, error) {
	p := params{flags: setupSQE128 | setupCQSize, cqEntries: 2 * entries}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &ring{fd: int(fd)}
	if err := r.mapQueues(&p); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *ring) mapQueues(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*cqeSize)
	if p.features&featSingleMM != 0 {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	r.sqMap, err = unix.Mmap(r.fd, offSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("io_uring mmap: %w", err)
	}
	r.singleMap = p.features&featSingleMM != 0
	if r.singleMap {
		r.cqMap = r.sqMap
	} else if r.cqMap, err = unix.Mmap(r.fd, offCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.cqMap = nil
		return fmt.Errorf("io_uring mmap: %w", err)
	}
	r.sqes, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("io_uring mmap: %w", err)
	}
	sq := unsafe.Pointer(&r.sqMap[0])
	cq := unsafe.Pointer(&r.cqMap[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqArray = unsafe.Add(sq, p.sqOff.array)
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Add(cq, p.cqOff.cqes)
	return nil
}

// nextSQE returns the next free submission entry, zeroed; it is queued by
// the next enter. There is always one: a ring has a slot per outstanding
// command and more.
func (r *ring) nextSQE() []byte {
	tail := atomic.LoadUint32(r.sqTail) + r.pending
	idx := tail & r.sqMask
	sqe := r.sqes[int(idx)*sqeSize : int(idx+1)*sqeSize]
	clear(sqe)
	*(*uint32)(unsafe.Add(r.sqArray, 4*idx)) = idx
	r.pending++
	return sqe
}

// cqe is a completion: the user data of its submission and its result.
type cqe struct {
	userData uint64
	res      int32
}

// wait submits the entries written since the last call and returns the
// completions there, blocking until there is at least one.
func (r *ring) wait(into []cqe) ([]cqe, error) {
	r.publish()
	for {
		into = r.reap(into)
		if len(into) > 0 && r.unsubmitted == 0 {
			return into, nil
		}
		if err := r.enter(len(into) == 0); err != nil {
			return into, err
		}
	}
}

// submitOnly submits the entries written since the last call without
// waiting, and returns the completions there.
func (r *ring) submitOnly(into []cqe) ([]cqe, error) {
	r.publish()
	for r.unsubmitted > 0 {
		if err := r.enter(false); err != nil {
			return into, err
		}
	}
	return r.reap(into), nil
}

// enter submits the published entries and, with wait, blocks until a
// completion is there. An interrupted or busy call is no error: the
// caller's loop calls again.
func (r *ring) enter(wait bool) error {
	var flags, minComplete uintptr
	if wait {
		flags, minComplete = enterGetEv, 1
	}
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(r.unsubmitted), minComplete, flags, 0, 0)
	switch errno {
	case 0:
		r.unsubmitted -= min(r.unsubmitted, uint32(n))
	case unix.EINTR, unix.EAGAIN, unix.EBUSY:
	default:
		return fmt.Errorf("io_uring_enter: %w", errno)
	}
	return nil
}

// publish makes the entries written since the last call visible to the
// kernel.
func (r *ring) publish() {
	if r.pending > 0 {
		atomic.StoreUint32(r.sqTail, atomic.LoadUint32(r.sqTail)+r.pending)
		r.unsubmitted += r.pending
		r.pending = 0
	}
}

// reap appends the completions there and frees their slots.
func (r *ring) reap(into []cqe) []cqe {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := unsafe.Add(r.cqes, uintptr(head&r.cqMask)*cqeSize)
		into = append(into, cqe{userData: *(*uint64)(c), res: *(*int32)(unsafe.Add(c, 8))})
	}
	atomic.StoreUint32(r.cqHead, head)
	return into
}

func (r *ring) close() {
	for _, m := range [][]byte{r.sqes, r.sqMap} {
		if m != nil {
			_ = unix.Munmap(m)
		}
	}
	if r.cqMap != nil && !r.singleMap {
		_ = unix.Munmap(r.cqMap)
	}
	_ = unix.Close(r.fd)
}
