package fs

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// scrape GETs url and returns every sample: "name{labels}" -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %q\n%s", url, resp.Status, resp.Header.Get("Content-Type"), b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetrics: a real HTTP client scrapes the Prometheus text, and the
// counters move as blocks are written, read and looked up.
func TestMetrics(t *testing.T) {
	m := newMount(t, Options{})
	srv := httptest.NewServer(m.metricsHandler())
	defer srv.Close()
	url := srv.URL + "/metrics"
	before := scrape(t, url)
	for _, name := range []string{
		"ucm_published_total", "ucm_memory_hits_total", "ucm_write_back_queue_blocks", "ucm_evictions_total",
		"ucm_rejected_writes_total", `ucm_tier_capacity_bytes{level="0",tier="mem"}`,
		`ucm_tier_used_bytes{level="1",tier="nvme"}`, `ucm_tier_health{level="1",state="up",tier="nvme"}`,
		"ucm_load_seconds_count", "ucm_dump_seconds_count", "ucm_flush_seconds_count", "ucm_lookup_seconds_count",
		"go_goroutines",
	} {
		if _, ok := before[name]; !ok {
			t.Errorf("no sample %s", name)
		}
	}
	if before["ucm_published_total"] != 0 || before[`ucm_tier_health{level="1",state="up",tier="nvme"}`] != 1 {
		t.Errorf("fresh mount: %v", before)
	}

	if err := os.Mkdir(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	var keys []format.Key
	var size int64
	for i := 0; i < 3; i++ {
		k, d := testBlock(testModel, i, 10_000)
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
		keys, size = append(keys, k), size+int64(len(d))
	}
	if err := writeFile(m.keyPath(absentKeys(testModel, 1)[0]), []byte("not a block")); errnoOf(err) != syscall.EINVAL {
		t.Fatalf("invalid block: %v", err)
	}
	if _, err := os.ReadFile(m.keyPath(keys[0])); err != nil {
		t.Fatal(err)
	}
	c := openCtl(t, m, "lookup")
	c.mustOK("exists " + testModel + " " + idList(append(keys, absentKeys(testModel, 2)...)))
	c.ask("exists nope")
	openCtl(t, m, "flush").mustOK("all")

	after := scrape(t, url)
	want := map[string]float64{
		"ucm_published_total":                            3,
		"ucm_published_bytes_total":                      float64(size),
		"ucm_rejected_writes_total":                      1,
		"ucm_memory_hits_total":                          1,
		`ucm_tier_bytes_in_total{level="0",tier="mem"}`:  float64(size),
		`ucm_tier_bytes_out_total{level="0",tier="mem"}`: float64(size / 3),
		"ucm_lookup_requests_total":                      1,
		"ucm_lookup_ids_total":                           5,
		"ucm_lookup_hits_total":                          3,
		"ucm_lookup_misses_total":                        2,
		"ucm_control_errors_total":                       1,
		"ucm_flush_requests_total":                       1,
		"ucm_flush_seconds_count":                        1,
		"ucm_lookup_seconds_count":                       1,
		`ucm_tier_blocks{level="0",tier="mem"}`:          3,
		`ucm_tier_blocks{level="1",tier="nvme"}`:         3,
		"ucm_write_back_queue_blocks":                    0,
	}
	for name, v := range want {
		if after[name] != v {
			t.Errorf("%s = %v, want %v", name, after[name], v)
		}
	}
	if after["ucm_write_backs_total"] < 3 || after["ucm_copied_bytes_total"] < float64(size) {
		t.Errorf("write-backs %v, copied bytes %v", after["ucm_write_backs_total"], after["ucm_copied_bytes_total"])
	}
}

// TestStatsExtended: .ucm/stats carries per-tier bytes in and out and
// the control plane's counters, next to the stack's.
func TestStatsExtended(t *testing.T) {
	m := newMount(t, Options{})
	if err := os.Mkdir(m.path(testModel), 0o755); err != nil {
		t.Fatal(err)
	}
	k, d := testBlock(testModel, 1, 5000)
	if err := writeFile(m.keyPath(k), d); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := os.ReadFile(m.keyPath(k)); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(m.path(".ucm", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"bytes_in"`, `"bytes_out"`, `"lookups"`, `"prefetches"`, `"flushes"`,
		`"control_errors"`, `"mem_hits"`, `"flush_queue"`} {
		if !strings.Contains(string(raw), field) {
			t.Errorf("stats lack %s:\n%s", field, raw)
		}
	}
	st := readStats(t, m)
	if len(st.Tiers) != 2 || st.Tiers[0].Name != "mem" || st.Tiers[0].BytesIn != int64(len(d)) ||
		st.Tiers[0].BytesOut != 2*int64(len(d)) || st.Tiers[1].BytesIn != 0 || st.Published != 1 {
		t.Errorf("stats: %+v", st)
	}
}
