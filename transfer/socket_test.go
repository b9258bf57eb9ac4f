package transfer

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/gpu/fdpass"
)

// passFD sends msg with the given files over a new connection to sock and
// returns the answer line.
func passFD(t *testing.T, sock *Socket, msg string, files ...*os.File) string {
	t.Helper()
	c, err := fdpass.Dial(sock.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send([]byte(msg), files...); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, fdpass.MaxMessage)
	n, _, err := c.Recv(buf)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(buf[:n]), "\n")
}

// TestSocket: a descriptor passed with "register <alloc>" waits under
// a token of the sender's uid; only that uid takes it, once; a token
// expires; malformed messages are refused and their descriptors closed.
func TestSocket(t *testing.T) {
	e := &Engine{log: slog.New(slog.NewTextHandler(io.Discard, nil)), refuse: testRefuse}
	sock, err := Listen(e, filepath.Join(t.TempDir(), "gpu.sock"), 0o600, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := passFD(t, sock, "register 8192", f)
	token, ok := strings.CutPrefix(a, "ok token=")
	if !ok {
		t.Fatalf("answer %q", a)
	}
	n, _ := strconv.ParseUint(token, 10, 64)
	if _, err := sock.take(os.Getuid()+1, n); !errors.Is(err, ErrNoToken) {
		t.Errorf("another uid's take: %v, want ErrNoToken", err)
	}
	p, err := sock.take(os.Getuid(), n)
	if err != nil || p.alloc != 8192 {
		t.Fatalf("take: %+v, %v", p, err)
	}
	p.f.Close()
	if _, err := sock.take(os.Getuid(), n); !errors.Is(err, ErrNoToken) {
		t.Errorf("a second take: %v, want ErrNoToken", err)
	}
	for _, msg := range []string{"frobnicate", "register x", "register 1 2"} {
		if a := passFD(t, sock, msg, f); !strings.HasPrefix(a, "err EIO ") && !strings.HasPrefix(a, "err EINVAL ") {
			t.Errorf("%q: %q, want err", msg, a)
		}
	}
	if a := passFD(t, sock, "register"); !strings.HasPrefix(a, "err ") {
		t.Errorf("register without a descriptor: %q", a)
	}
	if sock.Waiting() != 0 {
		t.Errorf("%d descriptors wait after refused messages", sock.Waiting())
	}

	sock.mu.Lock()
	sock.ttl = time.Millisecond
	sock.mu.Unlock()
	a = passFD(t, sock, "register", f)
	time.Sleep(5 * time.Millisecond)
	token, _ = strings.CutPrefix(a, "ok token=")
	n, _ = strconv.ParseUint(token, 10, 64)
	if _, err := sock.take(os.Getuid(), n); !errors.Is(err, ErrNoToken) {
		t.Errorf("an expired token: %v, want ErrNoToken", err)
	}
}

// testRefuse answers a refused message as the control files do, with
// EINVAL for a request error and EIO for any other.
func testRefuse(out []byte, file string, req []byte, err error) []byte {
	name := "EIO"
	if errors.Is(err, line.ErrInvalid) {
		name = "EINVAL"
	}
	return append(append(out, "err "+name+" "...), err.Error()+"\n"...)
}

// TestSocketConnsBounded: one uid holds at most MaxConnsPerUser
// connections to the socket; the next is answered with a refusal
// (ErrTooManyConns) and closed, and a place comes back when one closes.
func TestSocketConnsBounded(t *testing.T) {
	e := &Engine{log: slog.New(slog.NewTextHandler(io.Discard, nil)), refuse: testRefuse}
	sock, err := Listen(e, filepath.Join(t.TempDir(), "gpu.sock"), 0o600, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	held := make([]*fdpass.Conn, 0, MaxConnsPerUser)
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// Each connection is counted once the daemon took it: a message
	// answered proves it.
	for range MaxConnsPerUser {
		c, err := fdpass.Dial(sock.Path())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if err := c.Send([]byte("frobnicate")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, fdpass.MaxMessage)
		if _, _, err := c.Recv(buf); err != nil {
			t.Fatal(err)
		}
	}
	extra, err := fdpass.Dial(sock.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	buf := make([]byte, fdpass.MaxMessage)
	n, _, err := extra.Recv(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "too many connections") {
		t.Fatalf("connection %d: %q, %v; want a refusal", MaxConnsPerUser+1, buf[:n], err)
	}
	held[0].Close()
	held = held[1:]
	for i := 0; ; i++ {
		c, err := fdpass.Dial(sock.Path())
		if err != nil {
			t.Fatal(err)
		}
		c.Send([]byte("frobnicate"))
		n, _, _ := c.Recv(buf)
		c.Close()
		if !strings.Contains(string(buf[:n]), "too many connections") {
			break // the closed one's place came back
		}
		if i == 500 {
			t.Fatal("a closed connection's place never came back")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
