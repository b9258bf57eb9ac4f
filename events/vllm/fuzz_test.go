package vllm

import (
	"net"
	"sync"
	"testing"

	"github.com/ucmfs/ucmfs/events"
)

// fuzzed is the publisher the fuzz targets send to, one per process.
var fuzzed = sync.OnceValues(func() (*Publisher, error) {
	return Start(Config{Endpoint: "tcp://127.0.0.1:0", Replay: "tcp://127.0.0.1:0"}, journalSource{events.New(0)})
})

// fuzzListener feeds one input to addr: the bytes, the end of the
// client's side, then whatever the listener sends until it closes.
// A panic anywhere in the publisher ends the fuzzing process.
func fuzzListener(t *testing.T, addr func(*Publisher) net.Addr, b []byte) {
	p, err := fuzzed()
	if err != nil {
		t.Fatal(err)
	}
	sendRaw(t, addr(p), b)
}

// seeds are inputs that reach past the handshake: a greeting, a READY of
// the socket type peer, then frames.
func seeds(f *testing.F, peer string, msgs ...[]byte) {
	f.Add([]byte{})
	f.Add(greeting())
	hs := append(greeting(), readyCmd(peer)...)
	f.Add(hs)
	for _, m := range msgs {
		f.Add(append(append([]byte(nil), hs...), m...))
	}
	f.Add(append(append([]byte(nil), hs...), longFrame(0, 1<<50)...))
}

// FuzzPubListener sends arbitrary bytes to the PUB socket's port.
func FuzzPubListener(f *testing.F) {
	seeds(f, "SUB", []byte{0, 1, 1}, []byte{0, 3, 1, 'k', 'v'}, []byte{4, 5, 4, 'P', 'I', 'N', 'G'})
	f.Fuzz(func(t *testing.T, b []byte) { fuzzListener(t, (*Publisher).Addr, b) })
}

// FuzzReplayListener sends arbitrary bytes to the replay socket's port.
func FuzzReplayListener(f *testing.F) {
	seeds(f, "DEALER", append([]byte{1, 0}, append([]byte{0, 8}, make([]byte, 8)...)...), []byte{0, 2, 'h', 'i'})
	f.Fuzz(func(t *testing.T, b []byte) { fuzzListener(t, (*Publisher).ReplayAddr, b) })
}
