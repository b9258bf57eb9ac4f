package vllm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// ErrPeer is what a peer broke: the ZMTP greeting, a frame or message
// past its bounds, a command or message its socket may not send.
var ErrPeer = errors.New("kv events: the peer broke the protocol")

// peerError is ErrPeer as zmq4 reads it: a net.Error that is no
// timeout, so that it drops the connection.
type peerError struct{ err error }

func (e peerError) Error() string   { return e.err.Error() }
func (e peerError) Unwrap() error   { return e.err }
func (e peerError) Timeout() bool   { return false }
func (e peerError) Temporary() bool { return false }

// bounds are what a peer of one socket may send.
type bounds struct {
	frame  int             // the largest frame body after the handshake
	frames int             // the most frames of one message
	ready  int             // the largest READY command
	peers  map[string]bool // the socket types it may be
	// subscriptions, where > 0: every message is one frame, a
	// subscription (1 and a topic) or its cancel (0 and a topic), the
	// only messages a PUB socket reads (zmq4 would queue any other,
	// unread, and stop reading the connection); a connection sends at
	// most this many of them, cancels included.
	subscriptions int
}

// maxSubscriptions bounds the subscriptions and cancels one connection
// to the PUB port sends: zmq4 keeps every topic a connection subscribes
// to for as long as it lasts, and compares each message's topic with
// all of them, while a router subscribes to one topic or a few (a
// prefix of kv@POD@MODEL, or "" for all) once per connection. Counting
// the cancels too bounds what a peer can make the daemon do, not only
// hold: 16 messages of at most 1 KiB a connection.
const maxSubscriptions = 16

// Bounds of the two sockets: a PUB reads subscriptions (topics are
// short: kv@POD@MODEL), the replay ROUTER requests of two frames, an
// empty delimiter and a sequence number (8 bytes).
var (
	pubBounds    = bounds{frame: 1024, frames: 1, ready: 1024, subscriptions: maxSubscriptions, peers: map[string]bool{"SUB": true, "XSUB": true}}
	replayBounds = bounds{frame: 256, frames: 4, ready: 1024, peers: map[string]bool{"DEALER": true, "REQ": true, "ROUTER": true}}
)

// greetingLen is the length of a ZMTP 3 greeting.
const greetingLen = 64

// ourGreeting is the greeting zmq4 sends (version 3.0, NULL, as-server
// 0); a listener sends it itself before it reads the peer's.
var ourGreeting = func() []byte {
	g := make([]byte, greetingLen)
	g[0], g[9], g[10], g[11] = 0xff, 0x7f, 3, 0
	copy(g[12:32], "NULL")
	return g
}()

// writeTimeout bounds one write to a peer: a subscriber that reads
// nothing for that long is dropped (zmq4 writes to every subscriber in
// turn, so one that stalls would stall all).
const writeTimeout = 5 * time.Second

// guard is a connection to a peer that hands zmq4 only what bounds
// allow: it reads the peer's greeting and each frame whole, bounded
// before it allocates, checks it, and only then lets zmq4 read it. A
// broken rule closes the connection, with one log line. Writes are
// bounded in time.
type guard struct {
	net.Conn
	b        *bounds
	log      *slog.Logger
	greeted  bool
	ready    bool
	frames   int    // frames read of the message in progress
	subs     int    // subscriptions and cancels read
	pending  []byte // checked bytes zmq4 has not read yet
	swallow  int    // bytes of the greeting zmq4 writes that were sent already
	onClose  func()
	once     sync.Once
	closeErr error
	idleState
}

func newGuard(c net.Conn, b *bounds, log *slog.Logger) *guard {
	return &guard{Conn: c, b: b, log: log}
}

// Read hands out checked bytes, reading and checking the next unit when
// none are left.
func (g *guard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if err := g.next(); err != nil {
			g.Close()
			if errors.Is(err, ErrPeer) {
				g.log.Warn("kv events: a peer broke the protocol; its connection is closed", "peer", g.RemoteAddr().String(), "err", err)
				return 0, peerError{err}
			}
			if g.ready && errors.Is(err, os.ErrDeadlineExceeded) {
				return 0, g.idleClosed()
			}
			return 0, err
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// Write writes within writeTimeout, dropping the first bytes of a
// greeting sent already; a failed write closes the connection.
func (g *guard) Write(p []byte) (int, error) {
	skip := min(g.swallow, len(p))
	if skip > 0 && !bytes.Equal(p[:skip], ourGreeting[greetingLen-g.swallow:greetingLen-g.swallow+skip]) {
		return 0, peerError{fmt.Errorf("kv events: zmq4 sent another greeting than ours")}
	}
	g.swallow -= skip
	if skip == len(p) {
		return len(p), nil
	}
	g.Conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	n, err := g.Conn.Write(p[skip:])
	if err != nil {
		g.Close()
		return skip + n, peerError{err}
	}
	return skip + n, nil
}

// Close closes the connection (once; later calls return the first
// one's error).
func (g *guard) Close() error {
	g.once.Do(func() {
		g.closeErr = g.Conn.Close()
		if g.onClose != nil {
			g.onClose()
		}
	})
	return g.closeErr
}

// next reads the next unit (the greeting, or one frame), checks it and
// appends it to pending.
func (g *guard) next() error {
	if !g.greeted {
		var b [greetingLen]byte
		if _, err := io.ReadFull(g.Conn, b[:]); err != nil {
			return err
		}
		if err := checkGreeting(b[:]); err != nil {
			return err
		}
		g.greeted = true
		g.pending = append(g.pending, b[:]...)
		return nil
	}
	var hdr [9]byte
	if _, err := io.ReadFull(g.Conn, hdr[:2]); err != nil {
		return err
	}
	flags, size, hlen := hdr[0], uint64(hdr[1]), 2
	if flags&^0x07 != 0 {
		return fmt.Errorf("%w: frame flags %#x", ErrPeer, flags)
	}
	if flags&0x02 != 0 { // long: 8 bytes of length
		if _, err := io.ReadFull(g.Conn, hdr[2:]); err != nil {
			return err
		}
		size, hlen = binary.BigEndian.Uint64(hdr[1:]), 9
	}
	more, command := flags&0x01 != 0, flags&0x04 != 0
	limit := g.b.frame
	if !g.ready {
		limit = g.b.ready
	}
	if size > uint64(limit) {
		return fmt.Errorf("%w: a frame of %d bytes (at most %d)", ErrPeer, size, limit)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(g.Conn, body); err != nil {
		return err
	}
	if err := g.check(more, command, body); err != nil {
		return err
	}
	g.pending = append(append(g.pending, hdr[:hlen]...), body...)
	return nil
}

// check checks one frame against the handshake's state and the bounds.
func (g *guard) check(more, command bool, body []byte) error {
	if !g.ready {
		if !command || more {
			return fmt.Errorf("%w: the handshake wants a READY command", ErrPeer)
		}
		if err := checkReady(body, g.b.peers); err != nil {
			return err
		}
		g.ready = true
		g.waiting.Store(time.Now().UnixNano()) // the wait for a subscription or a request starts
		g.settle()                             // and the handshake's deadline ends
		return nil
	}
	if command {
		return fmt.Errorf("%w: a command after the handshake", ErrPeer)
	}
	g.frames++
	if g.frames > g.b.frames {
		return fmt.Errorf("%w: a message of more than %d frames", ErrPeer, g.b.frames)
	}
	if !more {
		g.frames = 0
	}
	if g.b.subscriptions == 0 {
		if !more {
			g.requested()
		}
		return nil
	}
	if len(body) == 0 || body[0] > 1 {
		return fmt.Errorf("%w: a message that is no subscription", ErrPeer)
	}
	if g.subs++; g.subs > g.b.subscriptions {
		return fmt.Errorf("%w: more than %d subscriptions and cancels", ErrPeer, g.b.subscriptions)
	}
	g.subscribed(body[0] == 1, string(body[1:]))
	return nil
}

// checkGreeting checks a ZMTP 3 greeting of the NULL mechanism.
func checkGreeting(b []byte) error {
	switch {
	case b[0] != 0xff || b[9] != 0x7f:
		return fmt.Errorf("%w: no ZMTP signature", ErrPeer)
	case b[10] < 3:
		return fmt.Errorf("%w: ZMTP version %d.%d (3.0 or later wanted)", ErrPeer, b[10], b[11])
	case !bytes.Equal(b[12:32], ourGreeting[12:32]):
		return fmt.Errorf("%w: a security mechanism other than NULL", ErrPeer)
	case b[32] > 1:
		return fmt.Errorf("%w: as-server %d", ErrPeer, b[32])
	}
	return nil
}

// checkReady checks a READY command: its name, metadata properties that
// each fit (name length, name, value length, value) with names of
// ZMTP's characters (ASCII letters, digits, "-_.+"), and one
// "Socket-Type" among peers. zmq4 title-cases the names it reads and
// panics on a socket type it does not know, so the type must come under
// that exact name, and no other name may fold to it.
func checkReady(body []byte, peers map[string]bool) error {
	if len(body) < 6 || body[0] != 5 || string(body[1:6]) != "READY" {
		return fmt.Errorf("%w: the handshake wants a READY command", ErrPeer)
	}
	typ, types := "", 0
	for p := body[6:]; len(p) > 0; {
		klen := int(p[0])
		if klen == 0 || len(p) < 1+klen+4 {
			return fmt.Errorf("%w: a READY property cut short", ErrPeer)
		}
		name := string(p[1 : 1+klen])
		vlen := binary.BigEndian.Uint32(p[1+klen:])
		p = p[1+klen+4:]
		if uint64(vlen) > uint64(len(p)) {
			return fmt.Errorf("%w: a READY property cut short", ErrPeer)
		}
		if strings.TrimFunc(name, nameChar) != "" {
			return fmt.Errorf("%w: a READY property named %q", ErrPeer, name)
		}
		if strings.EqualFold(name, "Socket-Type") {
			typ, types = string(p[:vlen]), types+1
			if name != "Socket-Type" {
				types++
			}
		}
		p = p[vlen:]
	}
	if types != 1 || !peers[typ] {
		return fmt.Errorf("%w: a peer socket of type %q", ErrPeer, typ)
	}
	return nil
}

// nameChar reports whether r may be in a ZMTP property name.
func nameChar(r rune) bool {
	return r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.+", r))
}
