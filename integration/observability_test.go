package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// metricsURL is the /metrics address a daemon announced.
func metricsURL(t *testing.T, d *daemon) string {
	t.Helper()
	m := regexp.MustCompile(`metrics on (http://[^\s"]+/metrics)`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no metrics line:\n%s", d.out.String())
	}
	return m[1]
}

// httpGet returns the status and body of a GET.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHealthEndpoints: /healthz and /readyz answer 200 on a mounted
// daemon's metrics address (curl -f fails on any other status).
func TestHealthEndpoints(t *testing.T) {
	requireTool(t, "curl")
	d := mountUCM(t, mountOpts{Args: []string{"--metrics-addr", "127.0.0.1:0"}})
	base := strings.TrimSuffix(metricsURL(t, d), "/metrics")
	if body := sh(t, "curl", "-sf", base+"/healthz"); body != "ok\n" {
		t.Errorf("/healthz: %q", body)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
}

// TestDashboardMetricsExist checks deploy/grafana-ucmfs.json: every query
// names at least one metric, and every metric it names is one a real
// daemon exports on /metrics.
func TestDashboardMetricsExist(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "grafana-ucmfs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	var queries []string
	collectQueries(dash, &queries)
	if len(queries) < 10 {
		t.Fatalf("only %d queries found in the dashboard", len(queries))
	}
	d := mountUCM(t, mountOpts{Args: []string{"--metrics-addr", "127.0.0.1:0"}})
	code, text := httpGet(t, metricsURL(t, d))
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	exported := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if name := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`).FindString(line); name != "" {
			exported[name] = true
		}
	}
	quoted := regexp.MustCompile(`"(\\.|[^"\\])*"`)
	metric := regexp.MustCompile(`\b(ucm|go|process)_[a-zA-Z0-9_:]*`)
	for _, q := range queries {
		names := metric.FindAllString(quoted.ReplaceAllString(q, `""`), -1)
		if len(names) == 0 {
			t.Errorf("query names no metric: %s", q)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("query names %s, which the daemon does not export: %s", n, q)
			}
		}
	}
}

// collectQueries gathers every PromQL string of a Grafana dashboard: the
// panels' "expr" and the variables' "definition".
func collectQueries(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "expr" || k == "definition") {
				*out = append(*out, s)
			}
			collectQueries(e, out)
		}
	case []any:
		for _, e := range x {
			collectQueries(e, out)
		}
	}
}

// TestJSONLogs: with --log-format json every line the daemon writes is
// one JSON object with time, level and msg, the milestones included.
func TestJSONLogs(t *testing.T) {
	d := startUCM(t, mountOpts{Args: []string{"--log-format", "json", "--log-level", "debug"}})
	deadline := time.Now().Add(readyWait)
	for !strings.Contains(d.out.String(), `"msg":"mounted on `+d.Mnt) {
		if time.Now().After(deadline) || !d.alive() {
			t.Fatalf("not ready:\n%s", d.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	sh(t, "mkdir", d.path("jsonlog"))
	mustPy(t, append([]string{"put", d.Mnt, "jsonlog"}, testIDs("jsonlog", 2)...)...)
	if code := d.stop(); code != 0 {
		t.Fatalf("exit %d\n%s", code, d.out.String())
	}
	lines := strings.Split(strings.TrimSpace(d.out.String()), "\n")
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON line: %q", line)
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("no %q in %q", k, line)
			}
		}
	}
	if len(lines) < 3 {
		t.Errorf("only %d log lines:\n%s", len(lines), d.out.String())
	}
}
