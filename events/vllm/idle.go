package vllm

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// A connection a listener accepted holds one of its slots (at most
// Config.MaxSubscribers or MaxReplayClients) for as long as it lasts,
// so one with nothing to do gives its slot up:
//
//   - a subscriber (PUB port) holding no subscription that takes the
//     topic (a prefix of it, "" included, as zmq4 matches) for
//     Config.SubscribeWait (10s) after its handshake, or after it
//     cancels the last one, is closed: it would never get a message;
//   - a replay client sending no request for Config.ReplayIdle (30s)
//     after its handshake or its last request is closed (a ZMQ DEALER
//     or REQ connects again by itself, and sends its next request then);
//   - when the slots are all held, a new connection closes the one with
//     nothing to do the longest: one in its handshake, a subscriber
//     without such a subscription, any replay client. Subscribers
//     holding one keep their slots: the new connection is closed
//     instead (connlimit), as a router already served is worth more
//     than a new peer.
//
// Each is a read deadline of the guard's connection, so no timer or
// goroutine of ours waits for it; zmq4 reads every connection of both
// sockets at all times (subscriptions, requests), so its read sees the
// deadline pass.

// idleState is what a guard keeps of its connection's activity.
type idleState struct {
	idle   time.Duration   // how long the connection may have nothing to do (0: no bound; a dialled one)
	topic  string          // the PUB socket's topic
	topics map[string]bool // the subscriptions held (at most maxSubscriptions)
	// waiting is since when (UnixNano) the connection has had nothing
	// to do; 0 while it has (a subscriber holding a subscription that
	// takes the topic). The listener's evict reads it.
	waiting atomic.Int64
}

// settle sets the read deadline the state calls for: waiting + idle, or
// none.
func (g *guard) settle() {
	w := g.waiting.Load()
	if g.idle <= 0 || w == 0 {
		g.Conn.SetReadDeadline(time.Time{})
		return
	}
	g.Conn.SetReadDeadline(time.Unix(0, w).Add(g.idle))
}

// requested notes a whole request (replay port): the idle time starts
// again.
func (g *guard) requested() {
	g.waiting.Store(time.Now().UnixNano())
	g.settle()
}

// subscribed notes a subscription (sub) or its cancel of topic (PUB
// port): a subscriber has something to do while it holds one that takes
// the socket's topic, and its wait starts when it holds none.
func (g *guard) subscribed(sub bool, topic string) {
	if g.topics == nil {
		g.topics = make(map[string]bool)
	}
	if sub {
		g.topics[topic] = true
	} else {
		delete(g.topics, topic)
	}
	takes := false
	for t := range g.topics {
		takes = takes || strings.HasPrefix(g.topic, t)
	}
	switch {
	case takes:
		g.waiting.Store(0)
	case g.waiting.Load() == 0:
		g.waiting.Store(time.Now().UnixNano())
	}
	g.settle()
}

// idleClosed is the error of a connection whose deadline passed after
// its handshake, with its log line: a warning for a subscriber (a router
// whose topic is not this socket's is misconfigured), a note for a
// replay client (an idle one is closed every ReplayIdle).
func (g *guard) idleClosed() error {
	peer := g.RemoteAddr().String()
	if g.b.subscriptions > 0 {
		g.log.Warn("kv events: a subscriber took no messages of this socket; its connection is closed",
			"peer", peer, "topic", g.topic, "subscriptions", len(g.topics), "wait", g.idle)
		return peerError{fmt.Errorf("%w: no subscription to %q within %v", ErrPeer, g.topic, g.idle)}
	}
	g.log.Info("kv events: a replay client sent no request; its connection is closed", "peer", peer, "idle", g.idle)
	return peerError{fmt.Errorf("%w: no request within %v", ErrPeer, g.idle)}
}

// evict closes the connection with nothing to do the longest, if any,
// for a new one (connlimit.Options.Evict).
func (l *listener) evict() bool {
	l.mu.Lock()
	var oldest *guard
	var since int64
	for g := range l.conns {
		if w := g.waiting.Load(); w != 0 && (oldest == nil || w < since) {
			oldest, since = g, w
		}
	}
	l.mu.Unlock()
	if oldest == nil {
		return false
	}
	l.e.log.Warn("kv events: the connections are at their cap; the one with nothing to do the longest is closed for a new one",
		"kind", l.e.conns.Name, "peer", oldest.RemoteAddr().String(), "idle", time.Since(time.Unix(0, since)).Round(time.Millisecond))
	oldest.Close()
	return true
}
