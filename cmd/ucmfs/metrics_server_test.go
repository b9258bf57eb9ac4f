package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsSlowHeaders: with every connection of the metrics port held
// by a client trickling its headers, a new client is still answered: it
// takes the slot of the oldest connection that has not completed a
// request.
func TestMetricsSlowHeaders(t *testing.T) {
	m, err := listenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m.start(http.NotFoundHandler(), &lifecycle{log: log}, log, nil)
	defer m.close()
	addr := m.ln.Addr().String()
	for range metricsMaxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
	}
	// The server accepts in order and counts a connection before it
	// accepts the next one: this client comes past the cap.
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz beside %d slow clients: %v", metricsMaxConns, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz beside %d slow clients: %s %q", metricsMaxConns, resp.Status, strings.TrimSpace(string(body)))
	}
}
