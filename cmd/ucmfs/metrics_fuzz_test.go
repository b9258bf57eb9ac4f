package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ucmfs/ucmfs/internal/connlimit"
)

// fuzzedMetrics is the metrics server FuzzMetricsListener sends to, one
// per process.
var fuzzedMetrics = sync.OnceValues(func() (*metricsServer, error) {
	m, err := listenMetrics("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m.start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ucm_test 1\n")
	}), &lifecycle{log: log}, log, connlimit.NewBudget(64))
	return m, nil
})

// FuzzMetricsListener sends arbitrary bytes to the metrics/health port:
// the bytes, the end of the client's side, then whatever the server
// sends until it closes. A panic ends the fuzzing process.
func FuzzMetricsListener(f *testing.F) {
	f.Add([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	f.Add([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.0\r\n\r\n"))
	f.Add([]byte("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\nab"))
	f.Add([]byte("GET / HTTP/1.1\r\n" + strings.Repeat("X: y\r\n", 5000) + "\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := fuzzedMetrics()
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", m.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(b)
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, c)
	})
}
