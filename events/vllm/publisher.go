package vllm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/connlimit"
)

// Source is what the publisher reads: the store's journal and its tiers.
type Source interface {
	Events() *events.Journal
	EventTiers() events.Tiers
	EachHeld(tier int, fn func(format.Key) bool)
}

// Config configures a Publisher.
type Config struct {
	// Endpoint is the PUB address, as vLLM's --kv-events-config
	// endpoint: "tcp://*:5557" (or any address with "*" or "::") binds,
	// "tcp://host:5557" connects to a router that binds, unless host is
	// this host's (localhost, one of its addresses): there it binds, or
	// connects where a router on this host listens already.
	Endpoint string
	// Replay is the ROUTER address replay requests come to; "" with a
	// listening Endpoint: the same host, the next port (port 0: a port
	// the kernel picks, as for Endpoint); "none": no replay.
	Replay string
	// Topic is the first frame of every message (default "kv-events";
	// a subscriber of "" gets every topic).
	Topic string
	// Buffer is how many batches the replay socket keeps (default 10000).
	Buffer int
	// HWM is the PUB socket's high-water mark, in messages (default
	// 100000): past it, messages are dropped, and a subscriber sees a gap
	// in the sequence numbers and asks for a replay.
	HWM int
	// Rank is data_parallel_rank of every batch (default 0).
	Rank int
	// MaxHashes bounds the hashes of one event (default 1024).
	MaxHashes int
	// Batch is the least time between two batches of live events (default
	// 10ms): the events of that time go out as one message, so a write
	// load costs a message per Batch, not one per block.
	Batch time.Duration
	// Pace is the pause between the batches of a walk of what the tiers
	// hold (default 1ms: 10^6 blocks in about a second).
	Pace time.Duration
	// Logger gets the publisher's lines (default slog.Default()).
	Logger *slog.Logger
	// MaxSubscribers bounds the connections of a listening PUB socket
	// (default 256), MaxReplayClients the replay socket's (default 64);
	// past them a new connection closes the one with nothing to do the
	// longest, or is closed at once where there is none (idle.go).
	MaxSubscribers, MaxReplayClients int
	// Budget is the process's budget of listeners' connections, which
	// both sockets draw on (nil: none beyond their own bounds).
	Budget *connlimit.Budget
	// IPCMode is the mode of an ipc socket's file (default 0600: the
	// daemon's user alone may connect), IPCGroup its group (0: the
	// daemon's).
	IPCMode  fs.FileMode
	IPCGroup int
	// Handshake bounds the time from a connection to its peer's READY
	// command (default 10s): one that sends nothing is closed then.
	Handshake time.Duration
	// SubscribeWait bounds how long a connection to a listening PUB
	// socket may hold no subscription that takes Topic, from its
	// handshake or from the cancel of its last one (default 10s): then
	// it is closed. ReplayIdle bounds how long a replay connection may
	// send no request, from its handshake or its last request (default
	// 30s). When a socket's connections are at their cap, a new one
	// closes the one with nothing to do the longest (transport.go).
	SubscribeWait, ReplayIdle time.Duration
	// Routable says which models' blocks are published (nil: every
	// model's); the others' are left out of every batch, so a router
	// never learns their hashes.
	Routable func(model string) bool
}

func (c *Config) setDefaults() {
	if c.Topic == "" {
		c.Topic = "kv-events"
	}
	if c.Buffer <= 0 {
		c.Buffer = 10000
	}
	if c.HWM <= 0 {
		c.HWM = 100000
	}
	if c.MaxHashes <= 0 {
		c.MaxHashes = 1024
	}
	if c.Pace <= 0 {
		c.Pace = time.Millisecond
	}
	if c.Batch <= 0 {
		c.Batch = 10 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxSubscribers <= 0 {
		c.MaxSubscribers = 256
	}
	if c.MaxReplayClients <= 0 {
		c.MaxReplayClients = 64
	}
	if c.Handshake <= 0 {
		c.Handshake = 10 * time.Second
	}
	if c.SubscribeWait <= 0 {
		c.SubscribeWait = 10 * time.Second
	}
	if c.ReplayIdle <= 0 {
		c.ReplayIdle = 30 * time.Second
	}
	if c.Routable == nil {
		c.Routable = func(string) bool { return true }
	}
}

// binds reports whether vLLM's publisher would bind ep (rather than
// connect): an address with "*" or "::", or an ipc one.
func binds(ep string) bool {
	return strings.Contains(ep, "*") || strings.Contains(ep, "::") || strings.HasPrefix(ep, "ipc://")
}

// local reports whether ep is a tcp address of this host (localhost, or
// an address of one of its interfaces): ucmfs listens there, unless a
// router on this host already does (then it connects, as vLLM would).
func local(ep string) bool {
	host, _, err := net.SplitHostPort(strings.TrimPrefix(ep, "tcp://"))
	if err != nil || !strings.HasPrefix(ep, "tcp://") {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// CheckEndpoint checks an endpoint's form: tcp://host:port or ipc://path.
func CheckEndpoint(ep string) error {
	switch {
	case strings.HasPrefix(ep, "ipc://") && len(ep) > len("ipc://"):
		return nil
	case strings.HasPrefix(ep, "tcp://"):
		host, port, err := net.SplitHostPort(strings.TrimPrefix(ep, "tcp://"))
		if err == nil && host != "" {
			if _, err = strconv.ParseUint(port, 10, 16); err == nil {
				return nil
			}
		}
		return fmt.Errorf("kv events endpoint %q: want tcp://HOST:PORT (HOST * to listen on all addresses)", ep)
	}
	return fmt.Errorf("kv events endpoint %q: want tcp://HOST:PORT or ipc://PATH", ep)
}

// nextPort is ep with its port plus one (tcp only; "" otherwise), or
// port 0 again where ep's is 0 (the kernel picks both).
func nextPort(ep string) string {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(ep, "tcp://"))
	if err != nil || !strings.HasPrefix(ep, "tcp://") {
		return ""
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return ""
	}
	if p == 0 {
		return ep
	}
	return "tcp://" + net.JoinHostPort(host, strconv.Itoa(p+1))
}

// guardedEndpoint registers ep (tcp://HOST:PORT, "*" for every
// address, or ipc://PATH) with the bounds of its socket, and returns it
// as zmq4 takes it (see transport.go); idle bounds how long a
// connection it accepts may have nothing to do.
func (p *Publisher) guardedEndpoint(ep string, b *bounds, maxConns int, name string, idle time.Duration) string {
	e := &endpoint{network: "tcp", addr: strings.Replace(strings.TrimPrefix(ep, "tcp://"), "*:", ":", 1), b: b,
		conns: connlimit.Options{Name: name, Max: maxConns, Budget: p.cfg.Budget, Log: p.log},
		mode:  ipcMode{perm: p.cfg.IPCMode, gid: p.cfg.IPCGroup}, log: p.log, handshake: p.cfg.Handshake,
		idle: idle, topic: p.cfg.Topic}
	if path, ok := strings.CutPrefix(ep, "ipc://"); ok {
		e.network, e.addr = "unix", path
	}
	zep := register(e)
	p.keys = append(p.keys, zep)
	return zep
}

// Publisher sends the journal's events as vLLM KV events; see the
// package comment.
type Publisher struct {
	cfg    Config
	src    Source
	log    *slog.Logger
	pub    zmq4.Socket
	replay zmq4.Socket // nil: no replay socket
	cancel context.CancelFunc
	done   sync.WaitGroup
	keys   []string // the endpoints registered with the transport
	tiers  events.Tiers

	seq   uint64 // the number of the next batch
	buf   bytes.Buffer
	kept  ring // the last batches, for replays
	batch []event
}

// Start opens the sockets and starts publishing; Close stops it.
func Start(cfg Config, src Source) (*Publisher, error) {
	cfg.setDefaults()
	if err := CheckEndpoint(cfg.Endpoint); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Publisher{cfg: cfg, src: src, log: cfg.Logger, cancel: cancel, tiers: src.EventTiers(),
		kept: ring{max: cfg.Buffer}}
	p.pub = zmq4.NewPub(ctx)
	if err := p.pub.SetOption(zmq4.OptionHWM, cfg.HWM); err != nil {
		cancel()
		return nil, err
	}
	var err error
	listened := false
	zep := p.guardedEndpoint(cfg.Endpoint, &pubBounds, cfg.MaxSubscribers, "kv events", cfg.SubscribeWait)
	switch {
	case binds(cfg.Endpoint):
		err, listened = p.pub.Listen(zep), true
	case local(cfg.Endpoint):
		// This host's address: listen there, as a subscriber on this
		// host expects; where a router here listens already, connect.
		if err = p.pub.Listen(zep); errors.Is(err, syscall.EADDRINUSE) {
			err = p.pub.Dial(zep)
		} else {
			listened = true
		}
	default:
		err = p.pub.Dial(zep)
	}
	if err != nil {
		p.pub.Close()
		p.forget()
		cancel()
		return nil, fmt.Errorf("kv events: %s: %w", cfg.Endpoint, err)
	}
	if cfg.Replay == "" && listened {
		cfg.Replay = nextPort(cfg.Endpoint)
		p.cfg.Replay = cfg.Replay
	}
	if cfg.Replay != "" && cfg.Replay != "none" {
		if err := CheckEndpoint(cfg.Replay); err != nil {
			p.pub.Close()
			p.forget()
			cancel()
			return nil, err
		}
		p.replay = zmq4.NewRouter(ctx, zmq4.WithID(zmq4.SocketIdentity("ucmfs-replay")))
		if err := p.replay.Listen(p.guardedEndpoint(cfg.Replay, &replayBounds, cfg.MaxReplayClients, "kv events replay", cfg.ReplayIdle)); err != nil {
			p.pub.Close()
			p.forget()
			cancel()
			return nil, fmt.Errorf("kv events replay: %s: %w", cfg.Replay, err)
		}
		p.done.Add(1)
		go p.serveReplays()
	}
	p.done.Add(1)
	go p.run(ctx)
	return p, nil
}

// ReplayEndpoint is the replay socket's address, as Endpoint ("" without
// one).
func (p *Publisher) ReplayEndpoint() string {
	if p.replay == nil {
		return ""
	}
	return bound(p.replay, p.cfg.Replay)
}

// bound is the address s listens on as an endpoint, or ep where it does
// not listen.
func bound(s zmq4.Socket, ep string) string {
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		return "tcp://" + a.String()
	}
	return ep
}

// Addr is the address the PUB socket listens on (nil where it connects
// to a router): with port 0, the one the kernel picked.
func (p *Publisher) Addr() net.Addr { return p.pub.Addr() }

// ReplayAddr is the address the replay socket listens on (nil without
// one).
func (p *Publisher) ReplayAddr() net.Addr {
	if p.replay == nil {
		return nil
	}
	return p.replay.Addr()
}

// Topic is the topic frame of every message.
func (p *Publisher) Topic() string { return p.cfg.Topic }

// Close stops publishing and closes the sockets.
func (p *Publisher) Close() error {
	p.cancel()
	err := p.pub.Close()
	if p.replay != nil {
		err = errors.Join(err, p.replay.Close())
	}
	p.done.Wait()
	p.forget()
	return err
}

// forget forgets the endpoints registered with the transport.
func (p *Publisher) forget() {
	for _, k := range p.keys {
		forget(k)
	}
}

// run publishes: a cleared batch and the walk of every tier, then the
// journal from where it stood before the walk, and again after a gap.
func (p *Publisher) run(ctx context.Context) {
	defer p.done.Done()
	defer recovered(p.log, "kv events: the publisher")
	j := p.src.Events()
	buf := make([]events.Event, 1024)
	linger := time.NewTimer(0)
	defer linger.Stop()
	for ctx.Err() == nil {
		pos := j.Next()
		p.resync(ctx)
		last := time.Now()
		for ctx.Err() == nil {
			n, next, lost := j.Read(pos, buf)
			if lost.Count() > 0 {
				p.log.Warn("kv events: the publisher fell a journal window behind; routers are sent AllBlocksCleared and what the tiers hold",
					"lost", lost.Count(), "from", lost.From, "to", lost.To)
				break
			}
			pos = next
			if n == 0 {
				select {
				case <-j.Wait(pos):
				case <-ctx.Done():
				}
				// Let the events of a Batch pile up: one message, one
				// wakeup, for all of them.
				linger.Reset(p.cfg.Batch - time.Since(last))
				select {
				case <-linger.C:
				case <-ctx.Done():
				}
				continue
			}
			for i := range buf[:n] {
				p.add(&buf[i])
			}
			p.flush()
			last = time.Now()
		}
	}
}

// resync sends AllBlocksCleared and BlockStored for what every tier
// holds, pacing the batches.
func (p *Publisher) resync(ctx context.Context) {
	p.batch = append(p.batch[:0], event{cleared: true})
	p.flush()
	for tier, medium := range p.tiers.Mediums {
		p.src.EachHeld(tier, func(k format.Key) bool {
			h, ok := p.tiers.Hash(k)
			if !ok || !p.cfg.Routable(k.Model) {
				return true
			}
			p.addHash(true, medium, h)
			if len(p.batch) > 0 && len(p.batch[len(p.batch)-1].hashes) >= p.cfg.MaxHashes {
				p.flush()
				select {
				case <-time.After(p.cfg.Pace):
				case <-ctx.Done():
					return false
				}
			}
			return true
		})
		p.flush()
	}
}

// add adds one journal event to the batch.
func (p *Publisher) add(e *events.Event) {
	switch e.Type {
	case events.Cleared:
		p.batch = append(p.batch, event{cleared: true})
	case events.Stored, events.Removed:
		if !e.HasHash || !p.cfg.Routable(e.Key.Model) || e.Tier < 0 || e.Tier >= len(p.tiers.Mediums) {
			return
		}
		p.addHash(e.Type == events.Stored, p.tiers.Mediums[e.Tier], e.Hash)
	}
}

// addHash adds h to the last event of the batch when it is of the same
// kind and medium and has room, else starts an event.
func (p *Publisher) addHash(stored bool, medium string, h uint64) {
	if n := len(p.batch); n > 0 {
		last := &p.batch[n-1]
		if !last.cleared && last.stored == stored && last.medium == medium && len(last.hashes) < p.cfg.MaxHashes {
			last.hashes = append(last.hashes, h)
			return
		}
	}
	p.batch = append(p.batch, event{stored: stored, medium: medium, hashes: []uint64{h}})
}

// flush publishes the batch, if any, as one message.
func (p *Publisher) flush() {
	if len(p.batch) == 0 {
		return
	}
	ts := float64(time.Now().UnixNano()) / 1e9
	payload, err := encodeBatch(&p.buf, ts, p.batch, p.cfg.Rank)
	p.batch = p.batch[:0]
	if err != nil {
		p.log.Error("kv events: encoding a batch", "err", err)
		return
	}
	payload = bytes.Clone(payload)
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], p.seq)
	p.kept.add(p.seq, payload)
	p.seq++
	if err := p.pub.Send(zmq4.NewMsgFrom([]byte(p.cfg.Topic), seq[:], payload)); err != nil {
		p.log.Warn("kv events: publishing a batch", "err", err)
	}
}

// endSeq is the end marker of a replay: -1 as 8 bytes.
var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// serveReplays answers replay requests [identity, "", start] with every
// kept batch from start on, then the end marker.
func (p *Publisher) serveReplays() {
	defer p.done.Done()
	defer recovered(p.log, "kv events: the replay server")
	for {
		msg, err := p.replay.Recv()
		if err != nil {
			return // closed
		}
		f := msg.Frames
		if len(f) != 3 || len(f[2]) != 8 {
			p.log.Warn("kv events: an invalid replay request", "frames", len(f))
			continue
		}
		id, start := f[0], binary.BigEndian.Uint64(f[2])
		for _, b := range p.kept.since(start) {
			var seq [8]byte
			binary.BigEndian.PutUint64(seq[:], b.seq)
			if err := p.replay.Send(zmq4.NewMsgFrom(id, nil, seq[:], b.payload)); err != nil {
				break
			}
		}
		_ = p.replay.Send(zmq4.NewMsgFrom(id, nil, endSeq, nil))
	}
}

// ring keeps the last batches for replays.
type ring struct {
	mu  sync.Mutex
	max int
	bs  []kept
}

// kept is one batch as sent.
type kept struct {
	seq     uint64
	payload []byte
}

func (r *ring) add(seq uint64, payload []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bs) >= 2*r.max { // drop the oldest half at once: O(1) per batch
		r.bs = append(r.bs[:0], r.bs[len(r.bs)-r.max:]...)
	}
	r.bs = append(r.bs, kept{seq, payload})
}

// since copies out the batches numbered start or later.
func (r *ring) since(start uint64) []kept {
	r.mu.Lock()
	defer r.mu.Unlock()
	bs := r.bs[max(0, len(r.bs)-r.max):]
	for i, b := range bs {
		if b.seq >= start {
			return append([]kept(nil), bs[i:]...)
		}
	}
	return nil
}
