package integration

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const ctlModel = "org--Ctl-7B"

// statsOf reads MNT/.ucm/stats into a map of its top-level numbers.
func statsOf(t *testing.T, d *daemon) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(d.path(".ucm", "stats"))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("stats: %v\n%s", err, raw)
	}
	return st
}

// waitUntil polls cond until it holds, failing the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after a minute", what)
		}
	}
}

// TestControlPythonClient drives lookup, prefetch and flush of the real
// daemon from the reference Python client, in its own process: blocks
// published by one daemon are found, after a restart, on the directory
// tier only, and prefetch brings them back into memory.
func TestControlPythonClient(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	sh(t, "mkdir", d.path(ctlModel))
	ids := testIDs("ctl", 6)
	absent := testIDs("ctl-absent", 2)
	mustPy(t, append([]string{"put", d.Mnt, ctlModel}, ids[:4]...)...)
	if out := mustPy(t, "flush", d.Mnt, ctlModel); out != "flushed\n" {
		t.Errorf("flush: %q", out)
	}
	query := []string{ids[0], ids[1], absent[0], ids[2], ids[4]}
	if out := mustPy(t, append([]string{"exists", d.Mnt, ctlModel}, query...)...); out != "3 11010\n" {
		t.Errorf("exists: %q", out)
	}
	if out := mustPy(t, append([]string{"prefix", d.Mnt, ctlModel}, query...)...); out != "2\n" {
		t.Errorf("prefix: %q", out)
	}
	r := py(t, "exists", d.Mnt, "no-such-model", ids[0])
	if r.Code != 3 || r.Errno() != "ENOENT" {
		t.Errorf("exists in an unknown model: exit %d %q", r.Code, r.Err)
	}
	if out := mustPy(t, "ctl", d.Mnt, "lookup", "exists "+ctlModel+" "+ids[0]+" NOT-AN-ID"); !strings.HasPrefix(out, "err EINVAL id 2 ") {
		t.Errorf("bad id: %q", out)
	}
	if out := mustPy(t, "ctl", d.Mnt, "flush", "everything"); !strings.HasPrefix(out, "err EINVAL ") {
		t.Errorf("bad flush: %q", out)
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}

	// A new daemon on the same tier: the blocks are on nvme only.
	d = mountUCM(t, mountOpts{Tier: d.Tier})
	tiersOf := func(id string) string {
		v, err := getxattr(blockPath(d.Mnt, ctlModel, id), "user.ucm.tiers")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := tiersOf(ids[0]); got != "nvme" {
		t.Fatalf("after restart, tiers %q", got)
	}
	if out := mustPy(t, append([]string{"prefetch", d.Mnt, ctlModel}, append(ids, absent...)...)...); out != "queued=4 missing=4\n" {
		t.Errorf("prefetch: %q", out)
	}
	waitUntil(t, "prefetch done", func() bool { return statsOf(t, d)["prefetch_pending"] == 0.0 })
	for _, id := range ids[:4] {
		if got := tiersOf(id); got != "mem,nvme" {
			t.Errorf("%s after prefetch: tiers %q", id, got)
		}
	}
	st := statsOf(t, d)
	if st["prefetch_promoted"] != 4.0 || st["prefetch_missing"] != 4.0 {
		t.Errorf("stats after prefetch: %v", st)
	}
	mustPy(t, append([]string{"verify", d.Mnt, ctlModel}, ids[:4]...)...)
}

// getxattr reads one extended attribute as a string.
func getxattr(path, name string) (string, error) {
	buf := make([]byte, 256)
	n, err := syscall.Getxattr(path, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// TestControlShell uses the control files the way docs/control.md shows:
// one descriptor per session with exec 3<>, echo and cat.
func TestControlShell(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--control-group", "65534"}})
	sh(t, "mkdir", d.path(ctlModel))
	ids := testIDs("shell-ctl", 3)
	mustPy(t, append([]string{"put", d.Mnt, ctlModel}, ids[:2]...)...)
	script := `set -e
cd "$1"
exec 3<>.ucm/lookup
echo "exists ` + ctlModel + ` ` + strings.Join(ids, " ") + `" >&3
cat <&3
echo "prefix ` + ctlModel + ` ` + strings.Join(ids, " ") + `" >&3
echo "prefix no-such-model ` + ids[0] + `" >&3
cat <&3
printf 'prefix ` + ctlModel + ` ` + ids[0] + `' >&3
cat <&3
exec 3>&-
exec 4<>.ucm/flush
echo all >&4
cat <&4
exec 4<>.ucm/prefetch
echo "` + ctlModel + ` ` + ids[0] + `" >&4
cat <&4
stat -c '%a %g' .ucm/lookup
`
	got := sh(t, "bash", "-c", script, "bash", d.Mnt)
	want := regexp.MustCompile(`^ok 2 110\nok 2\nerr ENOENT .*\nok 1\nok flushed\nok queued=1 missing=0\n660 65534\n$`)
	if !want.MatchString(got) {
		t.Errorf("shell session:\n%s", got)
	}
}

// TestMetricsCurl scrapes --metrics-addr with curl: the counters move as
// blocks are written and read.
func TestMetricsCurl(t *testing.T) {
	requireTool(t, "curl")
	d := mountUCM(t, mountOpts{Args: []string{"--metrics-addr", "127.0.0.1:0"}})
	m := regexp.MustCompile(`ucmfs: metrics on (http://\S+/metrics)`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no metrics line:\n%s", d.out.String())
	}
	metric := func(name string) string {
		t.Helper()
		text := sh(t, "curl", "-sf", m[1])
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`)
		v := re.FindStringSubmatch(text)
		if v == nil {
			t.Fatalf("no %s in:\n%s", name, text)
		}
		return v[1]
	}
	if v := metric("ucm_published_total"); v != "0" {
		t.Errorf("fresh: published %s", v)
	}
	sh(t, "mkdir", d.path(ctlModel))
	ids := testIDs("metrics", 4)
	mustPy(t, append([]string{"put", d.Mnt, ctlModel}, ids...)...)
	mustPy(t, append([]string{"verify", d.Mnt, ctlModel}, ids...)...)
	mustPy(t, append([]string{"exists", d.Mnt, ctlModel}, ids...)...)
	for name, want := range map[string]string{
		"ucm_published_total":                            "4",
		"ucm_memory_hits_total":                          "4",
		"ucm_lookup_ids_total":                           "4",
		"ucm_lookup_hits_total":                          "4",
		"ucm_lookup_requests_total":                      "1",
		`ucm_tier_bytes_in_total{level="0",tier="mem"}`:  strconv.Itoa(4 * testSize),
		`ucm_tier_bytes_out_total{level="0",tier="mem"}`: strconv.Itoa(4 * testSize),
		`ucm_tier_blocks{level="0",tier="mem"}`:          "4",
	} {
		if v := metric(name); v != want {
			t.Errorf("%s = %s, want %s", name, v, want)
		}
	}
	for _, name := range []string{"ucm_load_seconds_count", "ucm_dump_seconds_count", "ucm_write_back_queue_blocks",
		`ucm_tier_capacity_bytes{level="1",tier="nvme"}`, "ucm_evictions_total", "ucm_rejected_writes_total"} {
		metric(name)
	}
}
