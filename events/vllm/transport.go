package vllm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
	"github.com/ucmfs/ucmfs/internal/connlimit"
)

// The publisher's sockets reach the network only through the transport
// "ucmfs" registered here: zmq4 trusts what a peer sends (a frame's
// length is allocated as announced, malformed READY metadata panics, a
// handshake runs in its accept loop with no deadline), so every
// connection is a guard, and a listener hands zmq4 a connection only
// once the peer's greeting and READY command came, whole and checked,
// within Config.Handshake, in a goroutine of its own.
const scheme = "ucmfs"

func init() {
	if err := zmq4.RegisterTransport(scheme, guarded{}); err != nil {
		panic(err)
	}
}

// endpoint is one address a socket listens on or dials, with what
// bounds its peers: zmq4 names it by key ("ucmfs://<key>").
type endpoint struct {
	network, addr string // "tcp" or "unix", and the address
	b             *bounds
	conns         connlimit.Options
	mode          ipcMode
	log           *slog.Logger
	handshake     time.Duration // the deadline of the greeting and READY
	idle          time.Duration // how long an accepted connection may have nothing to do (idle.go)
	topic         string        // the PUB socket's topic (idle.go)
}

var (
	endpoints sync.Map // key → *endpoint
	lastKey   atomic.Uint64
)

// register names e for zmq4; forget forgets it.
func register(e *endpoint) string {
	key := strconv.FormatUint(lastKey.Add(1), 10)
	endpoints.Store(key, e)
	return scheme + "://" + key
}

func forget(ep string) { endpoints.Delete(strings.TrimPrefix(ep, scheme+"://")) }

// guarded is the transport; see scheme.
type guarded struct{}

var _ transport.Transport = guarded{}

func lookup(key string) (*endpoint, error) {
	e, ok := endpoints.Load(key)
	if !ok {
		return nil, fmt.Errorf("kv events: no endpoint %q", key)
	}
	return e.(*endpoint), nil
}

// Addr is the key itself.
func (guarded) Addr(key string) (string, error) { return key, nil }

// Dial connects and guards the connection; the handshake must end
// within the endpoint's handshake deadline.
func (guarded) Dial(ctx context.Context, d transport.Dialer, key string) (net.Conn, error) {
	e, err := lookup(key)
	if err != nil {
		return nil, err
	}
	c, err := d.DialContext(ctx, e.network, e.addr)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(e.handshake))
	return newGuard(c, e.b, e.log), nil
}

// Listen listens (an ipc socket with its owner and mode) and bounds the
// connections.
func (guarded) Listen(_ context.Context, key string) (net.Listener, error) {
	e, err := lookup(key)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	var unlink func()
	if e.network == "unix" {
		ln, unlink, err = listenUnix(e.addr, e.mode)
	} else {
		ln, err = net.Listen(e.network, e.addr)
	}
	if err != nil {
		return nil, err
	}
	addr := ln.Addr()
	if e.network == "unix" { // made elsewhere, then renamed to e.addr
		addr = &net.UnixAddr{Name: e.addr, Net: "unix"}
	}
	l := &listener{raw: ln, addr: addr, e: e, unlink: unlink, ready: make(chan net.Conn), done: make(chan struct{}), conns: map[*guard]bool{}}
	o := e.conns
	o.Evict = l.evict
	l.ln = connlimit.Wrap(ln, o)
	go l.accept()
	return l, nil
}

// listener accepts connections, bounded in number, and hands zmq4 those
// whose handshake came whole and checked.
type listener struct {
	raw    net.Listener
	addr   net.Addr // where peers connect: an ipc socket's final path
	ln     *connlimit.Listener
	e      *endpoint
	unlink func() // removes the ipc socket's file (nil: none)
	ready  chan net.Conn
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	conns  map[*guard]bool // the connections open: true once handed to zmq4
}

// accept starts a handshake per connection, until the listener closes.
func (l *listener) accept() {
	defer recovered(l.e.log, "kv events: the accept loop")
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.handshake(c)
	}
}

// handshake sends the greeting and reads the peer's greeting and READY
// (checked, within the deadline), then hands the connection over;
// zmq4 then writes its greeting, which the guard drops, and reads the
// peer's from the guard.
func (l *listener) handshake(c net.Conn) {
	defer recovered(l.e.log, "kv events: a handshake")
	g := newGuard(c, l.e.b, l.e.log)
	g.idle, g.topic = l.e.idle, l.e.topic
	g.waiting.Store(time.Now().UnixNano())
	g.onClose = func() { l.mu.Lock(); delete(l.conns, g); l.mu.Unlock() }
	l.mu.Lock()
	select {
	case <-l.done:
		l.mu.Unlock()
		g.Close()
		return
	default:
		l.conns[g] = false
	}
	l.mu.Unlock()
	c.SetDeadline(time.Now().Add(l.e.handshake))
	_, err := c.Write(ourGreeting)
	g.swallow = greetingLen
	for err == nil && !g.ready {
		err = g.next()
	}
	if err != nil {
		g.Close()
		if !errors.Is(err, net.ErrClosed) { // closed here: evicted, or the listener closed
			l.e.log.Warn("kv events: a connection's handshake failed; it is closed", "peer", c.RemoteAddr().String(), "err", err)
		}
		return
	}
	c.SetWriteDeadline(time.Time{})
	l.mu.Lock()
	if _, open := l.conns[g]; open {
		l.conns[g] = true
	}
	l.mu.Unlock()
	select {
	case l.ready <- g:
	case <-l.done:
		g.Close()
	}
}

// Accept returns the next connection whose handshake came.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes the connections in their handshake and
// removes an ipc socket's file.
func (l *listener) Close() error {
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		close(l.done)
		var shaking []*guard // zmq4 closes the others
		for g, handed := range l.conns {
			if !handed {
				shaking = append(shaking, g)
			}
		}
		l.mu.Unlock()
		err = l.ln.Close()
		for _, g := range shaking {
			g.Close()
		}
		if l.unlink != nil {
			l.unlink()
		}
	})
	return err
}

// Addr is the address listened on (an ipc socket's path).
func (l *listener) Addr() net.Addr { return l.addr }

// recovered logs a panic of the goroutine it is deferred in as one line
// (the daemon's log limits their rate) instead of ending the daemon.
func recovered(log *slog.Logger, what string) {
	if r := recover(); r != nil {
		log.Error(what+": a panic was recovered", "panic", fmt.Sprint(r))
	}
}
