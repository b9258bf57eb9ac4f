package gpu

import (
	"fmt"
	"runtime"
	"sync"
)

// thread runs functions on one goroutine locked to one OS thread. A CUDA
// context is current per OS thread; the Go scheduler moves goroutines
// between threads at will, so every driver call of a device goes through
// its thread, which made the context current once and keeps it.
//
// Requests are served one at a time, in order. A CUDA device runs one
// thread per GPU in use and one for host registration (see cudaDevice),
// so a long batch delays only later requests on the same GPU.
type thread struct {
	reqs chan func()

	mu     sync.RWMutex // held for reading while a request is in flight
	closed bool
}

// startThread starts the thread and runs init on it; when init fails the
// thread ends (and its OS thread with it) and the error is returned.
func startThread(init func() error) (*thread, error) {
	t := &thread{reqs: make(chan func())}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: when this goroutine returns, the runtime ends
		// the OS thread too, and with it any driver state bound to it.
		runtime.LockOSThread()
		if err := init(); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for f := range t.reqs {
			f()
		}
	}()
	if err := <-errc; err != nil {
		return nil, err
	}
	return t, nil
}

// do runs f on the thread and returns its error.
func (t *thread) do(f func() error) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return fmt.Errorf("gpu: device: %w", ErrClosed)
	}
	errc := make(chan error, 1)
	t.reqs <- func() { errc <- f() }
	return <-errc
}

// post queues f on the thread without waiting for it; after stop it is
// dropped.
func (t *thread) post(f func()) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if !t.closed {
		t.reqs <- f
	}
}

// stop runs final on the thread after every request in flight, then ends
// the thread; later do calls fail with ErrClosed. A second stop is a
// no-op returning nil.
func (t *thread) stop(final func() error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	errc := make(chan error, 1)
	t.reqs <- func() { errc <- final() }
	err := <-errc
	t.closed = true
	close(t.reqs)
	return err
}
