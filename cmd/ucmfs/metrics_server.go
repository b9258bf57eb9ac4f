package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/internal/connlimit"
)

// Bounds of the metrics/health port: a scraper and a few probes need a
// handful of connections; a client that holds one idle, or trickles its
// request, gives it up.
const (
	metricsMaxConns   = 64               // connections held at once
	metricsHeaderWait = 5 * time.Second  // from the connection (or the last request) to a request's headers
	metricsReadWait   = 10 * time.Second // to the whole request
	metricsWriteWait  = 30 * time.Second // to the end of the response (a scrape)
	metricsIdleWait   = 30 * time.Second // a keep-alive connection between requests
	metricsMaxHeader  = 16 << 10         // bytes of a request's headers
)

// metricsServer serves /metrics, /healthz and /readyz over HTTP, within
// the bounds above and the listeners' descriptor budget: when all its
// connections are held, a new one closes the one that has waited the
// longest without a request in progress (idle between keep-alive
// requests, or still reading the headers of its first one), so a probe
// is answered while idle or trickling clients wait. Only connections
// answering a request keep their slot.
type metricsServer struct {
	ln      net.Listener
	srv     *http.Server
	mu      sync.Mutex
	waiting map[net.Conn]time.Time // connections with no request in progress, since when
}

// listenMetrics opens the metrics address before the mount, so a port in
// use stops the daemon before it mounts anything.
func listenMetrics(addr string) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &metricsServer{ln: ln, waiting: map[net.Conn]time.Time{}}, nil
}

// start serves h at /metrics, and life's /healthz and /readyz, in the
// background; budget is the listeners' (nil: none beyond the cap).
func (m *metricsServer) start(h http.Handler, life *lifecycle, log *slog.Logger, budget *connlimit.Budget) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	life.register(mux)
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: metricsHeaderWait, ReadTimeout: metricsReadWait,
		WriteTimeout: metricsWriteWait, IdleTimeout: metricsIdleWait, MaxHeaderBytes: metricsMaxHeader,
		ConnState: m.track, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	ln := connlimit.Wrap(m.ln, connlimit.Options{Name: "metrics", Max: metricsMaxConns, Budget: budget, Log: log, Evict: m.evictWaiting})
	go func() {
		defer func() {
			if r := recover(); r != nil {
				log.Error("metrics server: a panic was recovered", "panic", fmt.Sprint(r))
			}
		}()
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
}

// track keeps the connections with no request in progress: new ones
// (net/http calls them active only once a request's headers came) and
// idle ones.
func (m *metricsServer) track(c net.Conn, s http.ConnState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s == http.StateNew || s == http.StateIdle {
		m.waiting[c] = time.Now()
	} else {
		delete(m.waiting, c)
	}
}

// evictWaiting closes the connection that has waited the longest with
// no request in progress, if any.
func (m *metricsServer) evictWaiting() bool {
	m.mu.Lock()
	var oldest net.Conn
	var since time.Time
	for c, t := range m.waiting {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	delete(m.waiting, oldest)
	m.mu.Unlock()
	if oldest == nil {
		return false
	}
	oldest.Close()
	return true
}

// URL is where the metrics are served.
func (m *metricsServer) URL() string { return "http://" + m.ln.Addr().String() + "/metrics" }

// close stops serving (a scrape in progress gets a few seconds).
func (m *metricsServer) close() {
	if m == nil {
		return
	}
	if m.srv == nil {
		m.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	m.srv.Shutdown(ctx)
}
