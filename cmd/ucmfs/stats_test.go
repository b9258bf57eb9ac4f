package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
