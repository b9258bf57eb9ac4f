package ucmdir

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/control"
)

// eventsHandle is one open descriptor of .ucm/events: its reads are the
// stream's lines, its writes move the stream's position
// (control.EventStream).
type eventsHandle struct {
	x    *Config
	path string
	es   *control.EventStream
}

var (
	_ = (gofs.FileReader)((*eventsHandle)(nil))
	_ = (gofs.FileWriter)((*eventsHandle)(nil))
	_ = (gofs.FileFlusher)((*eventsHandle)(nil))
	_ = (gofs.FileReleaser)((*eventsHandle)(nil))
)

// Read returns the next whole lines, waiting up to control.EventWait for
// one; an interrupted read fails with EINTR.
func (h *eventsHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.es.Read(withCaller(ctx), dest, control.EventWait)
	if err != nil {
		return nil, h.x.Host.Fail("read", h.path, err)
	}
	if n == 0 && ctx.Err() != nil {
		return nil, h.x.Host.Errno(ctx.Err())
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Write takes "from ..." lines (control.EventStream.Write).
func (h *eventsHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	n, err := h.es.Write(withCaller(ctx), data)
	if err != nil {
		return 0, h.x.Host.Fail("write", h.path, err)
	}
	return uint32(n), 0
}

// Flush has nothing to do.
func (h *eventsHandle) Flush(ctx context.Context) syscall.Errno { return 0 }

// Release ends the stream.
func (h *eventsHandle) Release(ctx context.Context) syscall.Errno {
	h.es.Close()
	return 0
}
