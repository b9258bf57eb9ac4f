package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/tiers"
)

// fakeStatsDir makes a directory that looks like a mount to `ucmfs stats`:
// it only reads MNT/.ucm/stats.
func fakeStatsDir(t *testing.T, raw []byte) string {
	t.Helper()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".ucm"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, ".ucm", "stats"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func sampleStats(t *testing.T) []byte {
	st := tiers.Stats{
		Tiers: []tiers.TierStats{
			{Name: "mem", Capacity: 1 << 30, Used: 256 << 20, Blocks: 128, Health: "up"},
			{Name: "nvme", Persistent: true, Capacity: 100 << 30, Used: 3 << 30, Blocks: 1536, Health: "unstable"},
		},
		MemHits: 900, LowerHits: 100, Misses: 7, Published: 1664, Rejected: 2, Duplicates: 3,
		Evictions: 11, Promotions: 5, WriteBacks: 1500, WriteBackErrors: 1, CRCErrors: 4,
		BytesIn: 3 << 30, BytesOut: 5 << 29, FlushQueue: 42,
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	// The mount may add fields of its own: they are shown as they are.
	return append(b[:len(b)-1], []byte(`,"passthrough":true}`)...)
}

func TestStatsHuman(t *testing.T) {
	raw := sampleStats(t)
	mnt := fakeStatsDir(t, raw)
	var out, errw bytes.Buffer
	if code := Main(context.Background(), []string{"ucmfs", "stats", mnt}, &out, &errw); code != exitOK {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	text := out.String()
	for _, want := range []string{
		"mem   1.0 GiB", "256.0 MiB", "25.0%", "128", "nvme", "100.0 GiB", "3.0%", "1536", "unstable",
		"hits         1000 (memory 900, lower tiers 100)", "misses       7", "bytes in     3.0 GiB",
		"bytes out    2.5 GiB", "flush queue  42", "evictions    11", "errors       5 (write-back 1, crc 4",
		"passthrough  true",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}

	out.Reset()
	if code := Main(context.Background(), []string{"ucmfs", "stats", "--json", mnt}, &out, io.Discard); code != exitOK {
		t.Fatalf("--json: exit %d", code)
	}
	if !bytes.Equal(out.Bytes(), raw) {
		t.Errorf("--json printed %q, want the file as it is", out.String())
	}
}

func TestStatsErrors(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"not a mount": {[]string{t.TempDir()}, exitFail, "not a ucmfs mount"},
		"no argument": {nil, exitUsage, "MOUNTPOINT"},
		"bad json":    {[]string{fakeStatsDir(t, []byte("{"))}, exitFail, "not a stats snapshot"},
	} {
		var errw bytes.Buffer
		code := Main(context.Background(), append([]string{"ucmfs", "stats"}, c.args...), io.Discard, &errw)
		if code != c.code || !strings.Contains(errw.String(), c.msg) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", name, code, errw.String(), c.code, c.msg)
		}
	}
}

func TestStatsMountRows(t *testing.T) {
	raw := []byte(`{"tiers":[],"lookups":3,"lookup_ids":12345,"lookup_hits":7,"gpu_device":"sim","gpu_regions":1,` +
		`"gpu_loads":2,"gpu_load_blocks":4,"gpu_load_bytes":3145728,"gpu_load_unmapped":0,"brand_new_counter":5}`)
	var out bytes.Buffer
	if err := printStats(&out, raw); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lookups            3 requests (12,345 ids, 7 present)",
		"GPU                device sim, 1 regions registered", "GPU loads          2 requests (4 blocks, 3.0 MiB, 0 unmapped)",
		"brand new counter  5"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "_") {
		t.Errorf("a snake_case key is shown:\n%s", out.String())
	}
}

func TestStatsWatchRates(t *testing.T) {
	snaps := []string{
		`{"tiers":[],"mem_hits":10,"lower_hits":0,"bytes_in":0,"topks":1}`,
		`{"tiers":[],"mem_hits":30,"lower_hits":20,"bytes_in":1048576000,"topks":1}`,
	}
	n := 0
	read := func() ([]byte, error) { n++; return []byte(snaps[min(n-1, 1)]), nil }
	var out bytes.Buffer
	if err := watchStats(context.Background(), &out, read, 50*time.Millisecond, 2); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if n != 2 || strings.Count(text, "every 50ms") != 2 || !strings.Contains(text, "per second, over the last") {
		t.Fatalf("%d reads:\n%s", n, text)
	}
	// 40 hits and 1000 MiB in about 50 ms: hundreds per second, GiB/s.
	for _, re := range []string{`hits\s+\d{3}/s`, `bytes in\s+\d+(\.\d)? GiB/s`, `top-k requests\s+0\.0/s`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("no %s in:\n%s", re, text)
		}
	}
}
