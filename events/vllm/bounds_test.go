package vllm

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// hangGuard bounds a read that must end with the listener closing the
// connection, so that a listener that never does fails the test instead
// of hanging it.
const hangGuard = 30 * time.Second

// handshaken dials addr and sends a greeting and a READY of socket type
// typ; it returns the connection once the listener's greeting and
// zmq4's READY came (so the listener has checked the handshake).
func handshaken(t *testing.T, addr net.Addr, typ string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(append(greeting(), readyCmd(typ)...)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, greetingLen)); err != nil {
		t.Fatal(err)
	}
	if _, err := readFrame(c); err != nil {
		t.Fatal(err)
	}
	return c
}

// subFrame is a subscription (sub 1) or its cancel (sub 0) of topic.
func subFrame(sub byte, topic string) []byte {
	body := append([]byte{sub}, topic...)
	if len(body) < 256 {
		return append([]byte{0, byte(len(body))}, body...)
	}
	return append(longFrame(0, uint64(len(body))), body...)
}

// closedByListener reads c until the listener closes it; it fails the
// test when the connection is still open after hangGuard.
func closedByListener(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(hangGuard))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s: the connection was still open after %v", what, hangGuard)
	}
}

// TestSubscriptionCap: a connection to the PUB port may send
// maxSubscriptions subscriptions and cancels together; the next one
// closes it (zmq4 would keep every topic, for good, and scan them all
// per message). A subscriber of 16 topics is served.
func TestSubscriptionCap(t *testing.T) {
	p, j := startPublisher(t, Config{})
	topic := strings.Repeat("t", 990)
	c := handshaken(t, p.Addr(), "SUB")
	for i := range maxSubscriptions + 1 {
		if _, err := c.Write(subFrame(1, topic+strconv.Itoa(i))); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
	}
	closedByListener(t, c, "17 subscriptions of 1000 bytes")

	c = handshaken(t, p.Addr(), "SUB")
	var b []byte
	for i := range maxSubscriptions + 1 {
		b = append(b, subFrame(byte(1-i%2), "x")...) // subscribe, cancel, subscribe...
	}
	c.Write(b)
	closedByListener(t, c, "17 subscriptions and cancels")

	s := zmq4.NewSub(context.Background())
	defer s.Close()
	if err := s.Dial("tcp://" + p.Addr().String()); err != nil {
		t.Fatal(err)
	}
	for i := range maxSubscriptions - 1 {
		if err := s.SetOption(zmq4.OptionSubscribe, "other-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if m := receive(t, s, j); len(m.Frames) != 3 {
		t.Errorf("a subscriber of %d topics got %d frames", maxSubscriptions, len(m.Frames))
	}
}
