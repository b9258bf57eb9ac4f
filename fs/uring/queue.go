package uring

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// FUSE-over-io_uring ABI (include/uapi/linux/fuse.h): the commands of the
// 80-byte command area and the layout of struct fuse_uring_req_header.
const (
	cmdRegister       = 1   // FUSE_IO_URING_CMD_REGISTER
	cmdCommitAndFetch = 2   // FUSE_IO_URING_CMD_COMMIT_AND_FETCH
	hdrOpIn           = 128 // op_in: the request's first argument (its op header)
	hdrEnt            = 256 // struct fuse_uring_ent_in_out
	hdrSize           = 288 // sizeof(struct fuse_uring_req_header)
	inHeaderSize      = 40  // sizeof(struct fuse_in_header)
	outHeaderSize     = 16  // sizeof(struct fuse_out_header)
	opInMax           = 128
	entCommitID       = hdrEnt + 8
	entPayloadSize    = hdrEnt + 16
)

// entry is one ring entry of a CPU's queue and the thread that serves it:
// the kernel writes a request into its header and payload buffers, the
// thread answers it in place and commits, which fetches the next one.
// One entry per thread: a request that blocks holds up no other.
type entry struct {
	qid     uint16
	r       *ring
	hdr     []byte // struct fuse_uring_req_header (a page)
	payload []byte // the request's payload, then the reply's
	iov     [2]unix.Iovec
	last    uint32 // the command last submitted
	log     *slog.Logger
}

// newEntry maps the buffers of an entry of queue qid and sets up its ring.
func newEntry(qid int, payloadSize int, log *slog.Logger) (*entry, error) {
	e := &entry{qid: uint16(qid), log: log}
	var err error
	if e.r, err = newRing(4); err != nil {
		return nil, err
	}
	anon := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if e.hdr, err = unix.Mmap(-1, 0, unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, anon); err != nil {
		e.close()
		return nil, err
	}
	// The payload buffer is only address space until a request touches it.
	if e.payload, err = unix.Mmap(-1, 0, payloadSize, unix.PROT_READ|unix.PROT_WRITE, anon|unix.MAP_NORESERVE); err != nil {
		e.close()
		return nil, err
	}
	e.iov[0].Base, e.iov[0].Len = &e.hdr[0], hdrSize
	e.iov[1].Base, e.iov[1].Len = &e.payload[0], uint64(len(e.payload))
	return e, nil
}

func (e *entry) close() {
	if e.r != nil {
		e.r.close()
	}
	for _, m := range [][]byte{e.hdr, e.payload} {
		if m != nil {
			_ = unix.Munmap(m)
		}
	}
}

// submit queues cmd (register or commit-and-fetch) for the kernel.
func (e *entry) submit(cmd uint32, fuseFD int, commitID uint64) {
	sqe := e.r.nextSQE()
	sqe[0] = opURingCmd
	binary.LittleEndian.PutUint32(sqe[4:], uint32(fuseFD))
	binary.LittleEndian.PutUint32(sqe[8:], cmd) // cmd_op
	if cmd == cmdRegister {
		binary.LittleEndian.PutUint64(sqe[16:], uint64(uintptr(unsafe.Pointer(&e.iov[0])))) // addr
		binary.LittleEndian.PutUint32(sqe[24:], 2)                                          // len: header and payload
	}
	binary.LittleEndian.PutUint64(sqe[32:], uint64(e.qid)+1) // user_data
	// struct fuse_uring_cmd_req: flags, commit_id, qid.
	binary.LittleEndian.PutUint64(sqe[sqeCmdOffset+8:], commitID)
	binary.LittleEndian.PutUint16(sqe[sqeCmdOffset+16:], e.qid)
	e.last = cmd
}

// serve runs on its own locked thread, pinned to the queue's CPU, until
// the connection ends: it registers the entry, then answers each request
// and commits it together with the fetch of the next. threads maps the
// thread's id to the queue meanwhile (HoldEntry).
func (e *entry) serve(fuseFD int, ps *fuse.ProtocolServer, registered chan<- error, threads *sync.Map) {
	runtime.LockOSThread()
	// The thread is never unlocked: it ends with the goroutine, and its
	// CPU affinity with it.
	defer e.close()
	tid := unix.Gettid()
	threads.Store(tid, int(e.qid))
	defer threads.Delete(tid)
	var set unix.CPUSet
	set.Set(int(e.qid))
	_ = unix.SchedSetaffinity(0, &set) // best effort: an offline CPU sends no requests
	var cqes []cqe
	var err error
	for try := 0; ; try++ {
		e.submit(cmdRegister, fuseFD, 0)
		cqes, err = e.r.submitOnly(cqes[:0])
		if err != nil || len(cqes) == 0 || !retry(cqes[0].res) || try == 100 {
			break
		}
		time.Sleep(time.Millisecond) // the connection is still starting
	}
	if err != nil || len(cqes) > 0 && cqes[0].res < 0 {
		registered <- registerError(err, cqes)
		return
	}
	registered <- nil
	for {
		if len(cqes) == 0 {
			if cqes, err = e.r.wait(cqes); err != nil {
				e.log.Error("FUSE io_uring queue stopped", "queue", e.qid, "err", err)
				return
			}
		}
		c := cqes[0]
		cqes = cqes[:copy(cqes, cqes[1:])]
		switch errno := unix.Errno(-c.res); {
		case c.res == 0:
			e.submit(cmdCommitAndFetch, fuseFD, e.answer(ps))
		case retry(c.res):
			time.Sleep(time.Millisecond)
			e.submit(e.last, fuseFD, binary.LittleEndian.Uint64(e.hdr[entCommitID:]))
		default:
			if !ended(errno) {
				e.log.Error("FUSE io_uring queue stopped", "queue", e.qid, "err", errno)
			}
			return
		}
	}
}

// retry reports whether a command's result asks for it to be sent again.
func retry(res int32) bool {
	return unix.Errno(-res) == unix.EAGAIN || unix.Errno(-res) == unix.EINTR
}

// ended reports whether errno is how the kernel ends a ring entry when
// the connection goes (unmount, abort, the daemon's exit).
func ended(errno unix.Errno) bool {
	return errno == unix.ENOTCONN || errno == unix.ECANCELED || errno == unix.ENODEV || errno == unix.ECONNABORTED
}

func registerError(err error, cqes []cqe) error {
	if err != nil {
		return err
	}
	return errors.Join(errRegister, unix.Errno(-cqes[0].res))
}

var errRegister = errors.New("FUSE io_uring register")

// answer decodes the request in the entry's buffers into go-fuse's wire
// format, has the protocol server answer it into the same buffers, and
// returns the commit id the kernel gave the request.
func (e *entry) answer(ps *fuse.ProtocolServer) uint64 {
	commitID := binary.LittleEndian.Uint64(e.hdr[entCommitID:])
	payloadSize := int(binary.LittleEndian.Uint32(e.hdr[entPayloadSize:]))
	in := (*fuse.InHeader)(unsafe.Pointer(&e.hdr[0]))
	unique := in.Unique
	// The kernel puts the request's first argument in op_in and the rest
	// in the payload; in_header.len still counts them all.
	opIn := int(in.Length) - inHeaderSize - payloadSize
	n, status := 0, fuse.EIO
	if opIn >= 0 && opIn <= opInMax && payloadSize <= len(e.payload) {
		n, status = ps.HandleRequest(
			[][]byte{e.hdr[:inHeaderSize], e.hdr[hdrOpIn : hdrOpIn+opIn], e.payload[:payloadSize]},
			[][]byte{e.hdr[:outHeaderSize], e.payload})
	}
	if !status.Ok() || n < outHeaderSize {
		if status.Ok() {
			status = fuse.EIO
		}
		*(*fuse.OutHeader)(unsafe.Pointer(&e.hdr[0])) = fuse.OutHeader{Length: outHeaderSize, Status: -int32(status), Unique: unique}
		n = outHeaderSize
	}
	binary.LittleEndian.PutUint32(e.hdr[entPayloadSize:], uint32(n-outHeaderSize))
	return commitID
}
