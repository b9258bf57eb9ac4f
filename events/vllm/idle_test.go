package vllm

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
)

// rawSub is a raw SUB connection to addr, handshaken, that subscribed
// to topics.
func rawSub(t *testing.T, addr net.Addr, topics ...string) net.Conn {
	t.Helper()
	c := handshaken(t, addr, "SUB")
	for _, topic := range topics {
		if _, err := c.Write(subFrame(1, topic)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// readFrame reads one ZMTP frame (command or message) of c.
func readFrame(c net.Conn) ([]byte, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(c, hdr[:2]); err != nil {
		return nil, err
	}
	size := uint64(hdr[1])
	if hdr[0]&0x02 != 0 {
		if _, err := io.ReadFull(c, hdr[2:]); err != nil {
			return nil, err
		}
		size = binary.BigEndian.Uint64(hdr[1:])
	}
	body := make([]byte, size)
	_, err := io.ReadFull(c, body)
	return body, err
}

// awaitBlock stores a block of hash h in j, again and again, until the
// raw subscriber c gets a batch naming it; it fails the test when c's
// connection ends first (or after hangGuard).
func awaitBlock(t *testing.T, c net.Conn, j *events.Journal, h uint64) {
	t.Helper()
	var id format.ID
	binary.BigEndian.PutUint64(id[len(id)-8:], h)
	defer pump(j, events.Event{Type: events.Stored, Key: format.Key{Model: "m", ID: id, Kind: format.Block}, Hash: h, HasHash: true})()
	want := binary.BigEndian.AppendUint64([]byte{0xcf}, h) // msgpack's uint64
	c.SetReadDeadline(time.Now().Add(hangGuard))
	for {
		body, err := readFrame(c)
		if err != nil {
			t.Fatalf("waiting for block %#x: %v", h, err)
		}
		if bytes.Contains(body, want) {
			return
		}
	}
}

// TestSubscribeWait: a connection to the PUB port that holds no
// subscription taking the topic for SubscribeWait after its handshake
// (none, another topic's, one cancelled) is closed; a subscriber
// connected before them is still served after.
func TestSubscribeWait(t *testing.T) {
	p, j := startPublisher(t, Config{Replay: "none", SubscribeWait: 50 * time.Millisecond})
	served := rawSub(t, p.Addr(), "")
	awaitBlock(t, served, j, 0xfeedface00000001)
	for what, topics := range map[string][]byte{
		"no subscription":       nil,
		"another topic":         subFrame(1, "zzz"),
		"a subscription undone": append(subFrame(1, "kv"), subFrame(0, "kv")...),
	} {
		c := handshaken(t, p.Addr(), "SUB")
		c.Write(topics)
		closedByListener(t, c, what)
	}
	awaitBlock(t, served, j, 0xfeedface00000002)
}

// TestReplayIdle: a replay connection that sends no request for
// ReplayIdle after its handshake, or after its last request (answered),
// is closed.
func TestReplayIdle(t *testing.T) {
	p, _ := startPublisher(t, Config{Replay: "tcp://127.0.0.1:0", ReplayIdle: 50 * time.Millisecond})
	closedByListener(t, handshaken(t, p.ReplayAddr(), "DEALER"), "no request")
	c := handshaken(t, p.ReplayAddr(), "DEALER")
	request := append([]byte{0x01, 0}, append([]byte{0, 8}, make([]byte, 8)...)...) // "", from 0
	if _, err := c.Write(request); err != nil {
		t.Fatal(err)
	}
	closedByListener(t, c, "one request")
}

// TestCapEvictsIdle: with every slot of a port held by a connection
// with nothing to do (handshaken, no subscription or no request), a new
// client is served: the connection idle the longest is closed for it.
func TestCapEvictsIdle(t *testing.T) {
	p, j := startPublisher(t, Config{Replay: "tcp://127.0.0.1:0", MaxSubscribers: 4, MaxReplayClients: 4})
	t.Run("replay", func(t *testing.T) {
		var held []net.Conn
		for range 4 {
			held = append(held, handshaken(t, p.ReplayAddr(), "DEALER"))
		}
		replay(t, p.ReplayAddr()) // answered to its end marker, or the test fails
		closedByListener(t, held[0], "the oldest idle replay client")
	})
	t.Run("pub", func(t *testing.T) {
		var held []net.Conn
		for range 4 {
			held = append(held, handshaken(t, p.Addr(), "SUB"))
		}
		if m := subscribe(t, p.Addr(), j); len(m.Frames) != 3 {
			t.Errorf("a subscriber beside 4 idle connections got %d frames", len(m.Frames))
		}
		closedByListener(t, held[0], "the oldest connection without a subscription")
	})
}

// TestConnCap: subscribers holding a subscription keep their slots: past
// MaxSubscribers of them the next connection is closed at once; a slot
// freed is taken again.
func TestConnCap(t *testing.T) {
	p, j := startPublisher(t, Config{Replay: "none", MaxSubscribers: 2})
	var held []net.Conn
	for i := range 2 {
		c := rawSub(t, p.Addr(), "")
		awaitBlock(t, c, j, 0xfeedface00000010+uint64(i))
		held = append(held, c)
	}
	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(c); len(got) != 0 {
		t.Errorf("a connection past the cap got %d bytes", len(got))
	}
	c.Close()
	held[0].SetReadDeadline(time.Time{})
	held[0].(*net.TCPConn).CloseWrite() // the listener closes it, freeing its slot
	io.Copy(io.Discard, held[0])
	subscribe(t, p.Addr(), j) // served once a slot was freed, or the test fails
}
