package vllm

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
)

// journalSource is a Source over a journal alone (the tiers hold nothing
// at start): tests append events to it.
type journalSource struct{ j *events.Journal }

func (s journalSource) Events() *events.Journal { return s.j }
func (s journalSource) EventTiers() events.Tiers {
	return events.NewTiers([]string{"mem"}, nil)
}
func (s journalSource) EachHeld(int, func(format.Key) bool) {}

// startPublisher starts a publisher on ports the kernel picks (PUB and
// replay) over a fresh journal.
func startPublisher(t *testing.T, cfg Config) (*Publisher, *events.Journal) {
	t.Helper()
	j := events.New(0)
	if cfg.Endpoint == "" {
		cfg.Endpoint = "tcp://127.0.0.1:0"
	}
	p, err := Start(cfg, journalSource{j})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, j
}

// greeting is a ZMTP 3.0 greeting of the NULL mechanism, as a client
// sends it.
func greeting() []byte {
	g := make([]byte, 64)
	g[0], g[9], g[10], g[11] = 0xff, 0x7f, 3, 0
	copy(g[12:], "NULL")
	return g
}

// readyCmd is a READY command frame announcing socket type typ.
func readyCmd(typ string) []byte {
	body := []byte{5}
	body = append(body, "READY"...)
	body = append(body, byte(len("Socket-Type")))
	body = append(body, "Socket-Type"...)
	body = binary.BigEndian.AppendUint32(body, uint32(len(typ)))
	body = append(body, typ...)
	return append([]byte{0x04, byte(len(body))}, body...)
}

// longFrame is the header of a long frame (flags ored in) announcing n
// bytes, with no body.
func longFrame(flags byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{0x02 | flags}, n)
}

// sendRaw dials addr, writes b, ends its side and reads until the
// listener closes the connection (what the listener sends is discarded).
func sendRaw(t *testing.T, addr net.Addr, b []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(b) // a listener may close before it read everything
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c)
}

// replay asks the replay socket for every batch from 0 with a DEALER and
// reads its answer to the end marker (the test fails on an error).
func replay(t *testing.T, addr net.Addr) {
	t.Helper()
	d := zmq4.NewDealer(context.Background())
	defer d.Close()
	if err := d.Dial("tcp://" + addr.String()); err != nil {
		t.Fatal(err)
	}
	if err := d.Send(zmq4.NewMsgFrom(nil, make([]byte, 8))); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := d.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Frames) == 3 && bytes.Equal(m.Frames[1], endSeq) {
			return
		}
	}
}

// subscribe connects a SUB to the PUB socket and returns the first
// message it gets; events are appended to j until one comes (a
// subscription reaches the publisher some time after the connection).
func subscribe(t *testing.T, addr net.Addr, j *events.Journal) zmq4.Msg {
	t.Helper()
	s := zmq4.NewSub(context.Background())
	defer s.Close()
	if err := s.Dial("tcp://" + addr.String()); err != nil {
		t.Fatal(err)
	}
	return receive(t, s, j)
}

// receive subscribes s to every topic and returns the first message it
// gets; events are appended to j until one comes.
func receive(t *testing.T, s zmq4.Socket, j *events.Journal) zmq4.Msg {
	t.Helper()
	if err := s.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	defer pump(j, events.Event{Type: events.Cleared, Tier: -1})()
	m, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// pump appends e to j once per batch interval until the function it
// returns is called (and returns).
func pump(j *events.Journal, e events.Event) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			j.Append(e)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// TestCrashFrames: a peer that announces a frame of 2^50 bytes, in the
// handshake or after it, on the PUB or the replay port, loses its
// connection; the daemon stays up and both ports serve the next client.
func TestCrashFrames(t *testing.T) {
	p, j := startPublisher(t, Config{Replay: "tcp://127.0.0.1:0"})
	huge := uint64(1) << 50
	for name, addr := range map[string]net.Addr{"pub": p.Addr(), "replay": p.ReplayAddr()} {
		peer := "SUB"
		if name == "replay" {
			peer = "DEALER"
		}
		for what, b := range map[string][]byte{
			"in the handshake": append(greeting(), longFrame(0x04, huge)...),
			"a message":        append(append(greeting(), readyCmd(peer)...), longFrame(0, huge)...),
			"a command":        append(append(greeting(), readyCmd(peer)...), longFrame(0x04, huge)...),
			"the greeting":     greeting()[:10],
		} {
			t.Run(name+" "+what, func(t *testing.T) { sendRaw(t, addr, b) })
		}
	}
	replay(t, p.ReplayAddr()) // answered to its end marker, or the test fails
	if m := subscribe(t, p.Addr(), j); len(m.Frames) != 3 {
		t.Errorf("the PUB port sent %d frames after the crash attempts", len(m.Frames))
	}
}

// TestIdleHolder: a connection that sends nothing does not stop the next
// replay client or subscriber.
func TestIdleHolder(t *testing.T) {
	p, j := startPublisher(t, Config{Replay: "tcp://127.0.0.1:0"})
	for _, addr := range []net.Addr{p.Addr(), p.ReplayAddr()} {
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	replay(t, p.ReplayAddr()) // answered to its end marker, or the test fails
	if m := subscribe(t, p.Addr(), j); len(m.Frames) != 3 {
		t.Errorf("the PUB port sent %d frames beside an idle connection", len(m.Frames))
	}
}

// TestHandshakeDeadline: a connection that sends nothing is closed when
// the handshake's deadline passes (no ZMTP greeting from it comes).
func TestHandshakeDeadline(t *testing.T) {
	p, _ := startPublisher(t, Config{Replay: "tcp://127.0.0.1:0", Handshake: 50 * time.Millisecond})
	for _, addr := range []net.Addr{p.Addr(), p.ReplayAddr()} {
		c, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c) // the listener's greeting, then its close
		c.Close()
		if err != nil || !bytes.Equal(got, ourGreeting) {
			t.Errorf("%s: read %q, %v; want the greeting, then the end", addr, got, err)
		}
	}
}

// TestIPCAddr: a publisher on an ipc endpoint reports the socket's path
// as its address (the daemon prints it at start), not the private
// directory it was made in and renamed from.
func TestIPCAddr(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "kv.sock")
	p, _ := startPublisher(t, Config{Endpoint: "ipc://" + sock, Replay: "none"})
	if got := p.Addr().String(); got != sock {
		t.Errorf("the publisher's address is %q, want %q", got, sock)
	}
}
