package uring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// DefaultThreads is the number of ring entries per CPU queue, each served
// by its own thread: a request that blocks (a write waiting for room in
// the memory tier) holds up only its own entry, and the kernel gives the
// CPU's next request to another.
const DefaultThreads = 2

// EnableParam is the fuse module parameter that lets connections use
// io_uring. Only an admin sets it; ucmfs never does.
const EnableParam = "/sys/module/fuse/parameters/enable_uring"

// Options configure a Transport.
type Options struct {
	MaxWrite int // the connection's max_write: each entry's payload buffer holds a request of it
	Threads  int // entries (and threads) per CPU queue; 0 takes DefaultThreads
	Logger   *slog.Logger
	// Mountpoint is where the connection is mounted: HoldEntry makes a
	// request there.
	Mountpoint string
}

// Transport serves one FUSE connection: a loop on /dev/fuse for what the
// kernel still sends there (forgets, interrupts, and every request when
// the ring is not in use) and a ring entry per thread for the rest.
type Transport struct {
	entries  []*entry
	log      *slog.Logger
	bufSize  int
	bufs     sync.Pool
	fd       int // the transport's own duplicate of the FUSE descriptor
	ps       *fuse.ProtocolServer
	serving  sync.WaitGroup
	inRing   bool
	closeOne sync.Once

	mnt     string       // the mountpoint (HoldEntry asks it for a request)
	payload int          // an entry's payload buffer
	base    int          // Options.Threads
	queues  []queueState // by queue id (CPU)
	threads sync.Map     // OS thread id -> queue id, of the threads serving entries
}

// Available says why this kernel offers no FUSE over io_uring, or nil: the
// fuse module's enable_uring parameter and io_uring itself
// (kernel.io_uring_disabled, a seccomp filter).
func Available() error {
	b, err := os.ReadFile(EnableParam)
	if err != nil {
		return fmt.Errorf("this kernel has no FUSE over io_uring (%s: %w)", EnableParam, err)
	}
	if strings.TrimSpace(string(b)) != "Y" {
		return fmt.Errorf("FUSE over io_uring is off (%s is %s; an admin turns it on)", EnableParam, strings.TrimSpace(string(b)))
	}
	r, err := newRing(4)
	if err != nil {
		return fmt.Errorf("io_uring is not usable here: %w", err)
	}
	r.close()
	return nil
}

// Prepare sets up the rings and buffers of every CPU queue, before the
// connection's INIT: once INIT says io_uring, the kernel holds every
// request until each queue has an entry, so nothing may fail after it
// that could have failed before.
func Prepare(opts Options) (*Transport, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opts.Threads <= 0 {
		opts.Threads = DefaultThreads
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	page := unix.Getpagesize()
	// The kernel's max_payload_sz: at least FUSE_MIN_READ_BUFFER, max_write
	// and max_pages pages; go-fuse asks for max_write rounded up to pages.
	payload := max(8192, (opts.MaxWrite+page-1)/page*page)
	t := &Transport{log: opts.Logger, bufSize: payload + page, fd: -1,
		mnt: opts.Mountpoint, payload: payload, base: opts.Threads}
	t.bufs.New = func() any { b := make([]byte, t.bufSize); return &b }
	cpus, err := possibleCPUs()
	if err != nil {
		return nil, err
	}
	t.queues = make([]queueState, cpus)
	for qid := range cpus {
		t.queues[qid].entries = opts.Threads
		for range opts.Threads {
			e, err := newEntry(qid, payload, opts.Logger)
			if err != nil {
				t.Close()
				return nil, err
			}
			t.entries = append(t.entries, e)
		}
	}
	return t, nil
}

// possibleCPUs is the kernel's number of FUSE queues, num_possible_cpus().
func possibleCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		c := a
		var err2 error
		if ok {
			c, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || c < a {
			return 0, fmt.Errorf("/sys/devices/system/cpu/possible: %q", b)
		}
		n += c - a + 1
	}
	return n, nil
}

// Serve serves the connection of fuseFD, whose INIT is answered, with ps.
// With ring (INIT said io_uring) it registers every entry and returns once
// they are registered; an entry the kernel refuses makes the kernel fall
// back to /dev/fuse, which the error says. Without ring it serves
// /dev/fuse alone.
func (t *Transport) Serve(fuseFD int, ps *fuse.ProtocolServer, ring bool) error {
	fd, err := unix.FcntlInt(uintptr(fuseFD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	t.fd, t.ps = fd, ps
	t.serving.Add(1)
	go t.serveDev()
	if !ring {
		t.Close()
		return nil
	}
	registered := make(chan error, len(t.entries))
	for _, e := range t.entries {
		t.start(e, registered)
	}
	var errs []error
	for range t.entries {
		if err := <-registered; err != nil {
			errs = append(errs, err)
		}
	}
	t.entries = nil // each serving goroutine owns and releases its entry
	if len(errs) > 0 {
		return fmt.Errorf("the kernel serves this mount on /dev/fuse: %w", errors.Join(errs...))
	}
	t.inRing = true
	return nil
}

// InRing reports whether requests travel over the ring.
func (t *Transport) InRing() bool { return t.inRing }

// Wait returns once the connection has ended (unmounted or aborted) and
// every loop of it has stopped.
func (t *Transport) Wait() {
	t.serving.Wait()
	if t.fd >= 0 {
		_ = unix.Close(t.fd)
		t.fd = -1
	}
}

// Close releases the rings of entries that never served.
func (t *Transport) Close() {
	t.closeOne.Do(func() {
		for _, e := range t.entries {
			e.close()
		}
		t.entries = nil
	})
}

// Opcodes the /dev/fuse loop answers without a goroutine of their own.
const (
	opForget      = 2
	opInterrupt   = 36
	opBatchForget = 42
)

// serveDev reads /dev/fuse until the connection ends. Forgets and
// interrupts are answered inline (they are quick, and an interrupt must
// not wait behind the request it interrupts); anything else in a
// goroutine of its own.
func (t *Transport) serveDev() {
	defer t.serving.Done()
	for {
		bp := t.bufs.Get().(*[]byte)
		n, err := unix.Read(t.fd, *bp)
		switch {
		case err == nil:
		case errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ENOENT):
			t.bufs.Put(bp)
			continue
		default:
			if !errors.Is(err, unix.ENODEV) {
				t.log.Error("FUSE device read failed; the mount stops", "err", err)
			}
			return
		}
		if n < inHeaderSize {
			t.bufs.Put(bp)
			continue
		}
		switch binary.LittleEndian.Uint32((*bp)[4:]) {
		case opForget, opBatchForget, opInterrupt:
			t.answerDev(bp, n)
		default:
			go t.answerDev(bp, n)
		}
	}
}

// answerDev answers one request read from /dev/fuse and writes the reply.
func (t *Transport) answerDev(bp *[]byte, n int) {
	defer t.bufs.Put(bp)
	req := (*bp)[:n]
	unique := binary.LittleEndian.Uint64(req[8:])
	op := t.bufs.Get().(*[]byte)
	defer t.bufs.Put(op)
	out := *op
	m, status := t.ps.HandleRequest([][]byte{req}, [][]byte{out})
	if !status.Ok() {
		*(*fuse.OutHeader)(unsafe.Pointer(&out[0])) = fuse.OutHeader{Length: outHeaderSize, Status: -int32(status), Unique: unique}
		m = outHeaderSize
	}
	if m == 0 {
		return // forgets and answered interrupts have no reply
	}
	if _, err := unix.Write(t.fd, out[:m]); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
		t.log.Warn("FUSE reply not written", "unique", unique, "err", err)
	}
}
