package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAdminTools drives warmup, top and stats --watch of the real binary
// against a mount whose blocks are only on the nvme tier (written, then
// the daemon restarted, so the memory tier starts empty).
func TestAdminTools(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	sh(t, "mkdir", d.path("adm"))
	ids := testIDs("admin", 30)
	mustPy(t, append([]string{"put", d.Mnt, "adm"}, ids...)...)
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: %d", code)
	}
	d = mountUCM(t, mountOpts{Tier: d.Tier})

	list := filepath.Join(filepath.Dir(d.Mnt), "ids")
	absent := testIDs("admin-absent", 1)[0]
	os.WriteFile(list, []byte("# warm these\n"+strings.Join(append(ids, absent), "\n")+"\n"), 0o644)
	cmd := exec.Command(ucmfsBin, "warmup", d.Mnt, "adm", "--from", list)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "queued=30 missing=1 promoted=30 failed=0" {
		t.Fatalf("warmup: %v %q\n%s", err, out, stderr.String())
	}
	if !strings.Contains(stderr.String(), "100% 30/30 in memory") {
		t.Errorf("no finished progress bar on stderr: %q", stderr.String())
	}
	for _, id := range ids {
		if tiers, _ := getxattr(blockPath(d.Mnt, "adm", id), "user.ucm.tiers"); !strings.HasPrefix(tiers, "mem") {
			t.Errorf("block %s after warmup is on %q, want mem first", id, tiers)
		}
	}
	if out, err := exec.Command(ucmfsBin, "warmup", d.Mnt, "adm", "not-an-id").CombinedOutput(); err == nil || !strings.Contains(string(out), "not-an-id") {
		t.Errorf("warmup with a bad id: %v %s", err, out)
	}

	top, err := exec.Command(ucmfsBin, "top", d.Mnt).Output()
	if err != nil || !regexpMatch(`(?m)^adm\s+30\s+\d`, string(top)) {
		t.Errorf("top: %v\n%s", err, top)
	}
	watch, err := exec.Command(ucmfsBin, "stats", "--watch", "--interval", "100ms", "--count", "2", d.Mnt).Output()
	if err != nil || strings.Count(string(watch), "TIER") != 2 || !strings.Contains(string(watch), "per second, over the last") ||
		!strings.Contains(string(watch), "prefetches") || strings.Contains(string(watch), "prefetch_promoted") {
		t.Errorf("stats --watch: %v\n%s", err, watch)
	}
}

// regexpMatch reports whether s matches the regular expression re.
func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
