package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
		"mem   1.0 GiB", "256.0 MiB", "25.0%", "128", "nvme", "100.0 GiB", "3.0%", "1,536", "unstable",
		"reads        hits 1,000 (memory 900, lower 100), misses 7",
		"published    1,664 files, 3.0 GiB (2 rejected, 3 duplicates)",
		"copied       2.5 GiB: 1,500 write-backs, 5 promotions, 0 demotions",
		"removed      11 evictions from memory, 0 drops from the last tier", "42 queued for write-back",
		"errors       5 (write-back 1, crc 4", "passthrough  true",
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
	raw := []byte(`{"tiers":[],"lookups":3,"lookup_ids":12345,"lookup_hits":7,` +
		`"gpu_loads":2,"gpu_load_blocks":4,"gpu_load_bytes":3145728,"gpu_load_unmapped":0,"brand_new_counter":5}`)
	var out bytes.Buffer
	if err := printStats(&out, raw); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lookups            3 requests, 12,345 ids, 7 present",
		"GPU loads          2 (4 blocks, 3.0 MiB, 0 from files)", "brand new counter  5"} {
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
	if n != 2 || strings.Count(text, "every 50ms") != 2 || !strings.Contains(text, "per second (last") {
		t.Fatalf("%d reads:\n%s", n, text)
	}
	// 40 hits and 1000 MiB in about 50 ms: hundreds per second, GiB/s.
	for _, re := range []string{`hits\s+50\s+\d{3}/s`, `bytes published\s+1000 MiB\s+\d+(\.\d)? GiB/s`, `top-k requests\s+1\s+0\.0/s`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("no %s in:\n%s", re, text)
		}
	}
}

// TestStatsFit80x24: with four tiers and counters in the tens of
// thousands, `stats` and each view of `stats --watch` fit a terminal of
// 80 columns and 24 lines, and the GPU's state is one line.
func TestStatsFit80x24(t *testing.T) {
	big := int64(99_999)
	st := tiers.Stats{MemHits: big, LowerHits: big, Misses: big, Published: big, Rejected: big, Duplicates: big,
		Promotions: big, Evictions: big, Demotions: big, Drops: big, WriteBacks: big, WriteBackErrors: big,
		DirectWrites: big, RoomWaits: big, CRCErrors: big, Quarantined: big, BytesIn: 999 << 30, BytesOut: 999 << 30,
		FlushQueue: int(big), DirtyBytes: 999 << 30, DirtyFiles: big, Throttles: big}
	for _, name := range []string{"mem", "nvme", "nfs", "ds3fs"} {
		st.Tiers = append(st.Tiers, tiers.TierStats{Name: name, Capacity: 999 << 40, Used: 998 << 40, Blocks: 99_999_999, Health: "unstable"})
	}
	b, _ := json.Marshal(st)
	mount := `,"lookups":99999,"lookup_ids":99999,"lookup_hits":99999,"prefetches":99999,"prefetch_queued":99999,` +
		`"prefetch_missing":99999,"prefetch_promoted":99999,"prefetch_failed":99999,"prefetch_pending":99999,` +
		`"flushes":99999,"flush_errors":99999,"control_errors":99999,"gpu_device":"cuda:0 NVIDIA H100 80GB HBM3","gpu_regions":256,` +
		`"gpu":{"device":"cuda","driver_version":12080,"contexts":[{}],"resets":0},` +
		`"gpu_loads":99999,"gpu_load_blocks":99999,"gpu_load_bytes":1e15,"gpu_load_unmapped":99999,` +
		`"gpu_dumps":99999,"gpu_dump_blocks":99999,"gpu_dump_bytes":1e15,"gpu_dump_existing":99999,` +
		`"repr_derived":99999,"topks":99999,"topk_candidates":99999,"topk_missing":99999,"topk_derived":99999,` +
		`"topk_reused":99999,"light_nodes":99999,"staging_files":99999,"writing_files":99999}`
	raw := append(b[:len(b)-1], mount...)
	check := func(what, text string) {
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		if len(lines) > 24 {
			t.Errorf("%s: %d lines:\n%s", what, len(lines), text)
		}
		for _, l := range lines {
			if len([]rune(l)) > 80 {
				t.Errorf("%s: a line of %d columns: %q", what, len([]rune(l)), l)
			}
		}
	}
	var out bytes.Buffer
	if err := printStats(&out, raw); err != nil {
		t.Fatal(err)
	}
	check("stats", out.String())
	if !strings.Contains(out.String(), "driver 12.8, 1 contexts, 0 resets") {
		t.Errorf("no one-line GPU state:\n%s", out.String())
	}
	n := 0
	read := func() ([]byte, error) { n++; return raw, nil }
	out.Reset()
	if err := watchStats(context.Background(), &out, read, time.Millisecond, 2); err != nil {
		t.Fatal(err)
	}
	// Each view is its time line and what follows up to the next one.
	views := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  \(every`).Split(out.String(), -1)
	if len(views) != 3 || n != 2 {
		t.Fatalf("%d views:\n%s", len(views)-1, out.String())
	}
	for i, v := range views[1:] {
		check(fmt.Sprintf("watch view %d", i+1), "time"+strings.TrimRight(v, "\n"))
	}
}
