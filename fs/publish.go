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
func (ip *inProgress) publish(ctx context.Context, durable bool) syscall.Errno {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if ip.done {
		if durable && ip.verdict == 0 {
			return ip.flushDurable(ctx)
		}
		return ip.verdict
	}
	ip.done = true
	ip.verdict = ip.publishOnce(ctx, durable)
	ip.end()
	return ip.verdict
}

// publishOnce is publish's work, under ip.mu.
// With durable set the block is durable when it returns 0.
func (ip *inProgress) publishOnce(ctx context.Context, durable bool) syscall.Errno {
	s, path := ip.s, ip.key.Path()
	st, err := ip.f.Stat()
	if err != nil {
		s.stack.Abort(ip.pw)
		return s.fail("close", path, err)
	}
	size := st.Size()
	if !ip.setMTime.IsZero() {
		ip.pw.SetMTime(ip.setMTime)
	}
	info, err := s.Publish(ip.pw, size, durable)
	switch {
	case err == nil:
		ip.size, ip.mtime = info.Size, info.MTime
		return 0
	case errors.Is(err, tiers.ErrExist):
		ip.size, ip.mtime = size, time.Now()
		if !ip.setMTime.IsZero() {
			// Written again (rsync after a change of times): the copy
			// kept takes the times the writer set.
			if err := s.stack.SetMTime(ip.key, ip.setMTime); err == nil {
				ip.mtime = ip.setMTime
			}
		}
		if durable {
			return ip.flushDurable(ctx)
		}
		return 0 // already present: one copy is kept
	default:
		return s.fail("close", path, err)
	}
}

// flushDurable makes the published block durable (fsync after publish).
func (ip *inProgress) flushDurable(ctx context.Context) syscall.Errno {
	if err := ip.s.stack.Flush(ctx, ip.key); err != nil {
		return ip.s.fail("fsync", ip.key.Path(), err)
	}
	return 0
}

// setattr applies a change to the file being written: a new size (within
// Options.MaxFileSize; ftruncate) and new times (kept: the published file
// takes the mtime its writer set last, so rsync's second run finds it
// unchanged); chmod and chown are accepted and change nothing (a
// published file is always 0444, owned by the mounting user). After
// publish every change is EPERM.
func (ip *inProgress) setattr(in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	errno := func() syscall.Errno {
		ip.mu.Lock()
		defer ip.mu.Unlock()
		if ip.done {
			return ip.s.fail("setattr", ip.key.Path(), fmt.Errorf("already published: %w", store.ErrImmutable))
		}
		if mtime, ok := in.GetMTime(); ok {
			ip.setMTime = mtime
		}
		sz, ok := in.GetSize()
		if !ok {
			return 0
		}
		if int64(sz) > ip.s.MaxFileSize() {
			return ip.s.fail("truncate", ip.key.Path(), store.ErrTooBig)
		}
		if err := ip.f.Truncate(int64(sz)); err != nil {
			return ip.s.fail("truncate", ip.key.Path(), err)
		}
		return 0
	}()
	if errno != 0 {
		return errno
	}
	ip.fillAttr(&out.Attr)
	return 0
}
