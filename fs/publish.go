package fs

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// publish validates and publishes the file once; later calls return the
// first verdict (and, for fsync, make the block durable).
func (h *writeHandle) publish(ctx context.Context, durable bool) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		if durable && h.verdict == 0 {
			return h.flushDurable(ctx)
		}
		return h.verdict
	}
	h.done = true
	h.verdict = h.publishOnce(ctx, durable)
	return h.verdict
}

// publishOnce is publish's work, under h.mu.
// With durable set the block is durable when it returns 0.
func (h *writeHandle) publishOnce(ctx context.Context, durable bool) syscall.Errno {
	s, path := h.s, h.key.Path()
	st, err := h.f.Stat()
	if err != nil {
		s.stack.Abort(h.pw)
		return s.fail("close", path, err)
	}
	size := st.Size()
	info, err := s.Publish(h.pw, size, durable)
	switch {
	case err == nil:
		h.size, h.mtime = info.Size, info.MTime
		return 0
	case errors.Is(err, tiers.ErrExist):
		h.size, h.mtime = size, time.Now()
		if durable {
			return h.flushDurable(ctx)
		}
		return 0 // already present: one copy is kept
	default:
		return s.fail("close", path, err)
	}
}

// flushDurable makes the published block durable (fsync after publish).
func (h *writeHandle) flushDurable(ctx context.Context) syscall.Errno {
	if err := h.s.stack.Flush(ctx, h.key); err != nil {
		return h.s.fail("fsync", h.key.Path(), err)
	}
	return 0
}

// fillAttr describes the file as its writer sees it: mode 0644 while it
// is written, 0444 once published.
func (h *writeHandle) fillAttr(a *fuse.Attr) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.done {
		h.s.fileAttr(a, h.size, h.mtime, publishedPerm)
		return
	}
	var size int64
	mtime := time.Now()
	if st, err := h.f.Stat(); err == nil {
		size, mtime = st.Size(), st.ModTime()
	}
	h.s.fileAttr(a, size, mtime, 0o644)
}

// setattr applies a change to the file being written: a new size (within
// Options.MaxFileSize; ftruncate); chmod, chown and utimes are accepted and
// change nothing (a published file is always 0444, owned by the mounting
// user, with its publish time). After publish every change is EPERM.
func (h *writeHandle) setattr(in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	errno := func() syscall.Errno {
		h.mu.RLock()
		defer h.mu.RUnlock()
		if h.done {
			return h.s.fail("setattr", h.key.Path(), fmt.Errorf("already published: %w", store.ErrImmutable))
		}
		sz, ok := in.GetSize()
		if !ok {
			return 0
		}
		if int64(sz) > h.s.MaxFileSize() {
			return h.s.fail("truncate", h.key.Path(), store.ErrTooBig)
		}
		if err := h.f.Truncate(int64(sz)); err != nil {
			return h.s.fail("truncate", h.key.Path(), err)
		}
		return 0
	}()
	if errno != 0 {
		return errno
	}
	h.fillAttr(&out.Attr)
	return 0
}
