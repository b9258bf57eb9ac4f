// Package connlimit bounds the connections the daemon's network
// listeners (the metrics/health HTTP port, the KV-event ports) hold, so
// that no client of theirs can take the descriptors the mount needs for
// its users' files.
//
// Each Listener has its own cap; all of them draw on one Budget, a share
// of the process's descriptor limit (RLIMIT_NOFILE) that the mount's own
// budgets (open files, files being written) leave free. A connection
// past either bound is accepted and closed at once, and one
// (rate-limited) warning says so: the client sees its connection end
// instead of waiting in the kernel's backlog, and the listener never
// holds more than its cap. A listener that can free a slot (an HTTP
// server closing the connection that has waited the longest with no
// request in progress, a KV-event port its oldest connection with
// nothing to do) says so with Options.Evict, so a new client is served
// while idle ones wait.
package connlimit

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// Budget is how many connections the listeners of a process may hold
// together.
type Budget struct {
	mu   sync.Mutex
	held int
	max  int
}

// NewBudget is a budget of max connections.
func NewBudget(max int) *Budget { return &Budget{max: max} }

// Share is the part of RLIMIT_NOFILE the listeners of the daemon may
// hold: 1/16 (the store keeps half for files being written, the file
// system a quarter for open files).
const Share = 16

// FromRlimit is a budget of the soft RLIMIT_NOFILE / Share, at least 16.
func FromRlimit() *Budget {
	n := 1024
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 {
		n = int(min(rl.Cur, 1<<24))
	}
	return NewBudget(max(n/Share, 16))
}

// Max is the budget's bound.
func (b *Budget) Max() int { return b.max }

// Held is how many connections the listeners hold now.
func (b *Budget) Held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

func (b *Budget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held >= b.max {
		return false
	}
	b.held++
	return true
}

func (b *Budget) give() {
	b.mu.Lock()
	b.held--
	b.mu.Unlock()
}

// Options configure a Listener.
type Options struct {
	Name   string       // the listener, in log lines ("metrics", "kv events")
	Max    int          // the most connections held at once (> 0)
	Budget *Budget      // the process's budget (nil: none beyond Max)
	Log    *slog.Logger // nil: slog.Default()
	// Evict, where set, is called when the listener is full: it closes
	// one connection the listener handed out (so its slot frees before
	// Evict returns) and reports whether it did.
	Evict func() bool
}

// Listener is a net.Listener that holds at most Options.Max connections
// and draws each from the Budget; see the package comment.
type Listener struct {
	net.Listener
	o    Options
	mu   sync.Mutex
	held int
}

// Wrap bounds ln's connections.
func Wrap(ln net.Listener, o Options) *Listener {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Max <= 0 {
		o.Max = 1
	}
	return &Listener{Listener: ln, o: o}
}

// Held is how many connections the listener holds now.
func (l *Listener) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// Accept returns the next connection within the bounds; the others it
// closes at once. A temporary failure (EMFILE, ENFILE, ECONNABORTED) is
// retried after a pause that doubles up to a second, so that a caller
// that retries every error at once (zmq4's accept loop) does not spin.
// It returns an error only when the listener is closed (or broken).
func (l *Listener) Accept() (net.Conn, error) {
	var pause time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !temporary(err) {
				return nil, err
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			l.o.Log.Warn("listener: accepting a connection failed; retrying", "kind", l.o.Name, "err", err, "pause", pause)
			time.Sleep(pause)
			continue
		}
		pause = 0
		if l.take() || l.o.Evict != nil && l.o.Evict() && l.take() {
			return &conn{Conn: c, l: l}, nil
		}
		c.Close()
		l.o.Log.Warn("listener: a connection past the cap was closed", "kind", l.o.Name,
			"held", l.Held(), "cap", l.o.Max, "budget", l.budgetMax())
	}
}

func (l *Listener) budgetMax() int {
	if l.o.Budget == nil {
		return 0
	}
	return l.o.Budget.Max()
}

// take counts one more connection, or reports that it may not.
func (l *Listener) take() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held >= l.o.Max {
		return false
	}
	if l.o.Budget != nil && !l.o.Budget.take() {
		return false
	}
	l.held++
	return true
}

func (l *Listener) give() {
	l.mu.Lock()
	l.held--
	l.mu.Unlock()
	if l.o.Budget != nil {
		l.o.Budget.give()
	}
}

// temporary reports whether an Accept error passes (descriptors short,
// a connection reset before it was accepted).
func temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// conn gives its slot back when it is closed (once).
type conn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

// Close frees the connection's slot and closes it: a peer that sees the
// end of the connection finds the slot free.
func (c *conn) Close() error {
	c.once.Do(c.l.give)
	return c.Conn.Close()
}
