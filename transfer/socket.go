package transfer

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/gpu/fdpass"
)

// The GPU socket: how a VMM allocation's descriptor reaches the daemon.
//
// A file descriptor crosses processes only over a Unix socket
// (SCM_RIGHTS); a control file under the mount cannot carry one. So the
// daemon listens on a socket file outside the mount (Socket) and the
// mount shows its path beside the control files. An engine connects and
// sends, as one message with one descriptor,
//
//	register [<alloc bytes>]              ->  ok token=<n>
//
// and then, on its .ucm/gpu descriptor, "register vmm <n> <size> ...".
// The descriptor waits under the token, keyed by the sender's uid as the
// kernel reports it (SO_PEERCRED): only a register from a process of the
// same uid takes it, once, within TokenTTL; a token not taken in time is
// closed. A connection may send any number of messages; each gets one
// answer line ("ok token=N" or "err <ERRNO> <message>").

// Limits of the GPU socket.
const (
	// TokenTTL is how long a passed descriptor waits for its register.
	TokenTTL = 30 * time.Second
	// MaxTokens is the most descriptors one uid may have waiting.
	MaxTokens = 64
	// MaxConnsPerUser is the most connections one uid may hold open to
	// the socket (each is a goroutine and a descriptor of the daemon);
	// MaxConns bounds them all. A connection past either is answered
	// "err EMFILE ..." and closed.
	MaxConnsPerUser = 64
	MaxConns        = 1024
)

// Socket accepts descriptors for register vmm. Its methods are safe
// for concurrent use.
type Socket struct {
	e   *Engine
	l   *fdpass.Listener
	ttl time.Duration

	mu      sync.Mutex
	next    uint64
	waiting map[tokenKey]*passedFD
	conns   map[*fdpass.Conn]int // open connections, to their peer's uid
	perUID  map[int]int          // open connections per uid
	closed  bool
	wg      sync.WaitGroup
}

// tokenKey is a token of one uid.
type tokenKey struct {
	uid   int
	token uint64
}

// passedFD is a descriptor waiting for its register.
type passedFD struct {
	f     *os.File
	alloc int64 // the allocation's bytes, as the message said (0: unsaid)
	at    time.Time
}

// Listen creates the socket file at path (mode perm; a stale socket is
// replaced) and serves it for the sessions of e until Close. ttl is how long a
// descriptor waits for its register (0: TokenTTL).
func Listen(e *Engine, path string, perm os.FileMode, ttl time.Duration) (*Socket, error) {
	l, err := fdpass.Listen(path, perm)
	if err != nil {
		return nil, err
	}
	if ttl <= 0 {
		ttl = TokenTTL
	}
	s := &Socket{e: e, l: l, ttl: ttl, waiting: make(map[tokenKey]*passedFD),
		conns: make(map[*fdpass.Conn]int), perUID: make(map[int]int)}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Path is the socket file.
func (s *Socket) Path() string { return s.l.Path() }

// Close stops listening, ends the connections, removes the socket file
// and closes every descriptor still waiting.
func (s *Socket) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	for k, p := range s.waiting {
		p.f.Close()
		delete(s.waiting, k)
	}
	s.mu.Unlock()
	err := s.l.Close()
	s.wg.Wait()
	return err
}

// accept serves connections until the listener closes.
func (s *Socket) accept() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.e.log.Warn("gpu socket: accept", "socket", s.Path(), "err", err)
			}
			return
		}
		uid, _, perr := c.Peer()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		if perr != nil || len(s.conns) >= MaxConns || s.perUID[uid] >= MaxConnsPerUser {
			held, all := s.perUID[uid], len(s.conns)
			s.mu.Unlock()
			s.turnAway(c, uid, held, all, perr)
			continue
		}
		s.conns[c] = uid
		s.perUID[uid]++
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c, uid)
	}
}

// turnAway answers a connection past the bounds (or whose peer is not
// known) with one refusal line, logged as a refused request, and closes
// it.
func (s *Socket) turnAway(c *fdpass.Conn, uid, held, all int, perr error) {
	defer c.Close()
	err := fmt.Errorf("uid %d holds %d connections to the GPU socket (at most %d; %d of %d in all): %w",
		uid, held, MaxConnsPerUser, all, MaxConns, ErrTooManyConns)
	if perr != nil {
		err = fmt.Errorf("peer credentials: %v: %w", perr, ErrTooManyConns)
	}
	_ = c.Send(s.e.refuse(nil, "gpu.sock", nil, err))
}

// serve answers the messages of one connection of uid.
func (s *Socket) serve(c *fdpass.Conn, uid int) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		if s.perUID[uid]--; s.perUID[uid] <= 0 {
			delete(s.perUID, uid)
		}
		s.mu.Unlock()
		c.Close()
	}()
	_, pid, err := c.Peer()
	if err != nil {
		s.e.log.Warn("gpu socket: peer credentials", "err", err)
		return
	}
	buf := make([]byte, fdpass.MaxMessage)
	for {
		n, files, err := c.Recv(buf)
		if err != nil && !errors.Is(err, fdpass.ErrTruncated) {
			return // the peer closed, or the socket is closing
		}
		var answer []byte
		token, err2 := s.put(uid, buf[:n], files, err)
		if err2 != nil {
			answer = s.e.refuse(nil, "gpu.sock", buf[:n], fmt.Errorf("pid %d: %w", pid, err2))
		} else {
			answer = append(strconv.AppendUint([]byte("ok token="), token, 10), '\n')
		}
		if err := c.Send(answer); err != nil {
			return
		}
	}
}

// put keeps the one descriptor of a message under a new token of uid.
func (s *Socket) put(uid int, msg []byte, files []*os.File, recvErr error) (uint64, error) {
	keep := false
	defer func() {
		if !keep {
			for _, f := range files {
				f.Close()
			}
		}
	}()
	if recvErr != nil {
		return 0, line.Err(line.ErrTooMany, "message or descriptors truncated: send one short line and one descriptor")
	}
	t := line.NewTokens(msg)
	var alloc int64
	if verb := t.Next(); string(verb) != "register" {
		return 0, line.Err(line.ErrInvalid, "unknown message %q: want register [<alloc bytes>] with one descriptor", line.Clip(verb))
	}
	if tok := t.Next(); tok != nil {
		var ok bool
		if alloc, ok = line.Count(tok); !ok || !t.Done() {
			return 0, line.Err(line.ErrInvalid, "register %q: want register [<alloc bytes>]", line.Clip(msg))
		}
	}
	if len(files) != 1 {
		return 0, line.Err(line.ErrInvalid, "register carries %d descriptors, want 1", len(files))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, line.Err(ErrNoSocket, "the GPU socket is closing")
	}
	now := time.Now()
	held := 0
	for k, p := range s.waiting {
		switch {
		case now.Sub(p.at) > s.ttl:
			p.f.Close()
			delete(s.waiting, k)
		case k.uid == uid:
			held++
		}
	}
	if held >= MaxTokens {
		return 0, line.Err(line.ErrTooMany, "uid %d has %d descriptors waiting for register vmm, the most it may", uid, held)
	}
	s.next++
	s.waiting[tokenKey{uid, s.next}] = &passedFD{f: files[0], alloc: alloc, at: now}
	keep = true
	return s.next, nil
}

// take hands the descriptor waiting under token for uid to the caller,
// who closes it.
func (s *Socket) take(uid int, token uint64) (*passedFD, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tokenKey{uid, token}
	p := s.waiting[k]
	if p == nil {
		return nil, line.Err(ErrNoToken, "no descriptor waits under token %d for uid %d: pass it over %s first (a token is good once)", token, uid, s.Path())
	}
	delete(s.waiting, k)
	if time.Since(p.at) > s.ttl {
		p.f.Close()
		return nil, line.Err(ErrNoToken, "token %d expired: a descriptor waits %v for its register", token, s.ttl)
	}
	return p, nil
}

// Waiting is the number of descriptors waiting for their register.
func (s *Socket) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting)
}

// OpenSocket opens the GPU socket of the engine at path (nothing
// without a path), with mode perm and, when gid >= 0, that group, and
// keeps it for register vmm.
func (e *Engine) OpenSocket(path string, perm os.FileMode, gid int) error {
	if path == "" {
		return nil
	}
	sock, err := Listen(e, path, perm, 0)
	if err != nil {
		return fmt.Errorf("gpu socket: %w", err)
	}
	if gid >= 0 {
		if err := os.Chown(sock.Path(), -1, gid); err != nil {
			sock.Close()
			return fmt.Errorf("gpu socket: %w", err)
		}
	}
	e.socket = sock
	return nil
}

// Socket is the GPU socket, nil when none is open.
func (e *Engine) Socket() *Socket { return e.socket }

// CloseSocket closes the GPU socket, if any: the descriptors waiting
// under tokens are closed and the socket file removed.
func (e *Engine) CloseSocket() {
	if sock := e.socket; sock != nil {
		if err := sock.Close(); err != nil {
			e.log.Warn("closing the gpu socket", "socket", sock.Path(), "err", err)
		}
	}
}
