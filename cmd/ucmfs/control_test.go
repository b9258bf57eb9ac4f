package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestControlSettings: control_group and metrics_addr come from the file
// and the flags (the flags win); a group that does not exist and an
// address that is not HOST:PORT are usage errors.
func TestControlSettings(t *testing.T) {
	conf := writeTemp(t, t.TempDir(), "c.yaml", "control_group: \"0\"\nmetrics_addr: 127.0.0.1:9105\n")
	cfg, code, msg := parseMount(t, "--config", conf, "--memory-only", "/m")
	if code != exitOK || cfg.ControlGroup != "0" || cfg.MetricsAddr != "127.0.0.1:9105" {
		t.Fatalf("from the file: exit %d (%s), %+v", code, msg, cfg)
	}
	cfg, code, msg = parseMount(t, "--config", conf, "--memory-only", "--control-group", "root",
		"--metrics-addr", ":0", "/m")
	if code != exitOK || cfg.ControlGroup != "root" || cfg.MetricsAddr != ":0" {
		t.Fatalf("flags over the file: exit %d (%s), %+v", code, msg, cfg)
	}
	if cfg, _, _ := parseMount(t, "--memory-only", "/m"); cfg.ControlGroup != "" || cfg.MetricsAddr != "" {
		t.Errorf("defaults: control group %q, metrics %q", cfg.ControlGroup, cfg.MetricsAddr)
	}
	for name, args := range map[string][]string{
		"unknown group": {"--control-group", "no-such-group-here", "/m"},
		"bad address":   {"--metrics-addr", "9105", "/m"},
	} {
		if _, code, msg := parseMount(t, append([]string{"--memory-only"}, args...)...); code != exitUsage || msg == "" {
			t.Errorf("%s: exit %d (%q), want %d", name, code, msg, exitUsage)
		}
	}
}

// TestMetricsServer: the server answers /metrics with what the handler
// writes, and a port in use is an error before anything is mounted.
func TestMetricsServer(t *testing.T) {
	m, err := listenMetrics("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	life := &lifecycle{log: log}
	m.start(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ucm_test 1\n")
	}), life, log, nil)
	defer m.close()
	base := strings.TrimSuffix(m.URL(), "/metrics")
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503} {
		if resp, err := http.Get(base + path); err != nil || resp.StatusCode != want {
			t.Errorf("GET %s before the mount: %v %v, want %d", path, resp, err, want)
		} else {
			resp.Body.Close()
		}
	}
	resp, err := http.Get(m.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ucm_test 1\n" {
		t.Errorf("GET %s: %s %q", m.URL(), resp.Status, body)
	}
	if _, err := listenMetrics(strings.TrimPrefix(strings.TrimSuffix(m.URL(), "/metrics"), "http://")); err == nil {
		t.Error("a second server on the same port started")
	}
	if m, err := listenMetrics(""); m != nil || err != nil {
		t.Errorf("no address: %v, %v", m, err)
	}
}
