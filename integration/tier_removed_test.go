package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTierDirRemovedWhileMounted: rm -rf of the nvme tier's directory
// under a mount whose memory holds every file. The daemon sees it (the
// tier goes down, one log line), no write makes the directory again
// behind the administrator's back, a second daemon cannot take the path
// meanwhile, and once the directory is back the files memory kept are
// written to it again: after a clean stop and a restart every file
// reads whole. (Before: stats said the tier was up, nothing was logged,
// new writes made the directory again, the clean stop wrote nothing
// back, and the files were gone after the restart.)
func TestTierDirRemovedWhileMounted(t *testing.T) {
	o := mountOpts{}
	d := mountUCM(t, o)
	m := filesModel(t, d, "fm")
	content := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("file %03d;", i)), 1000) }
	const n = 44
	for i := range n {
		if err := os.WriteFile(filepath.Join(m, fmt.Sprintf("f%03d.bin", i)), content(i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flushAll(t, d)
	if err := os.RemoveAll(d.Tier); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nvme tier down after its directory was removed", func() bool { return tierHealth(t, d, "nvme") == "down" })
	if !strings.Contains(d.out.String(), "tier down: its directory was removed") {
		t.Errorf("no log line of the removed directory:\n%s", d.out.String())
	}
	// A write now lands in memory; nothing makes the directory again.
	if err := os.WriteFile(filepath.Join(m, "late.bin"), content(n), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Tier); !os.IsNotExist(err) {
		t.Errorf("the removed tier directory is back without the administrator: %v", err)
	}
	// A second daemon over the same path: refused while the first runs.
	o2 := mountOpts{Tier: d.Tier}
	d2 := startUCM(t, o2)
	if code := d2.wait(); code == 0 || !strings.Contains(d2.out.String(), "in use by another daemon") {
		t.Errorf("a second daemon over the tier's path: exit %d\n%s", code, d2.out.String())
	}
	// The directory back (the second daemon may have made it): the
	// tier comes up and memory's files are written to it.
	if err := os.MkdirAll(d.Tier, 0o700); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nvme tier up again", func() bool { return tierHealth(t, d, "nvme") != "down" })
	flushAll(t, d)
	for i := range n {
		if _, err := os.Stat(filepath.Join(d.Tier, "fm", fmt.Sprintf("f%03d.bin", i))); err != nil {
			t.Errorf("f%03d.bin is not on the tier again: %v", i, err)
		}
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	d = mountUCM(t, o2)
	for i := range n + 1 {
		name := fmt.Sprintf("f%03d.bin", i)
		if i == n {
			name = "late.bin"
		}
		if b, err := os.ReadFile(d.path("fm", name)); err != nil || !bytes.Equal(b, content(i)) {
			t.Errorf("%s after the restart: %d bytes, %v", name, len(b), err)
		}
	}
}

// tierHealth is the health .ucm/stats gives the tier named name.
func tierHealth(t *testing.T, d *daemon, name string) string {
	t.Helper()
	for _, tier := range statsOf(t, d)["tiers"].([]any) {
		if tm := tier.(map[string]any); tm["name"] == name {
			return tm["health"].(string)
		}
	}
	return ""
}

// TestTierPathReplacedByLink: whoever may write the parent of a shared
// tier's directory (a share's root) moves the directory away and puts a
// link to another directory of this host at its path. The daemon sees
// its directory gone and never takes the link: a second user's writes
// through the mount land nowhere outside the tier, however many probes
// run; a real directory of the tier's owner at the path is taken again.
func TestTierPathReplacedByLink(t *testing.T) {
	u := newLocalUser(t)
	dir, o := sharedMountOpts(t)
	parent := filepath.Join(dir, "sharep")
	tier := filepath.Join(parent, "tier")
	elsewhere := filepath.Join(testDir(t), "fakesystemd")
	for _, d := range []string{tier, elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o.Bare = true
	o.Args = append(o.Args, "--memory", "64MiB", "--memory-dir", memDir, "--log-level", "warn",
		"--tier", "nfs:"+tier, "--negative-ttl", sharedTTL.String())
	d := mountUCM(t, o)
	if err := os.Rename(tier, tier+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, tier); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nfs tier down once a link replaced its directory", func() bool { return tierHealth(t, d, "nfs") == "down" })
	m := d.path("ssh.service.d")
	u.run("mkdir " + m + ` && python3 -c "import os; os.setxattr('` + m + `', 'user.ucm.layout', b'files')"`)
	u.run("printf '[Service]\\nExecStartPre=/bin/true\\n' > " + m + "/override.conf")
	// Some probes run with the link at the path.
	probes := tierProbes(t, d, "nfs")
	waitFor(t, "three more probes", func() bool { return tierProbes(t, d, "nfs") >= probes+3 })
	if h := tierHealth(t, d, "nfs"); h != "down" {
		t.Errorf("the tier took the link at its path: health %s", h)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("the directory behind the link now holds %v", ents)
	}
	// The tier's owner makes a real directory at the path: taken again.
	os.Remove(tier)
	if err := os.Mkdir(tier, 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nfs tier up again", func() bool { return tierHealth(t, d, "nfs") != "down" })
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("the directory behind the link now holds %v", ents)
	}
}

// tierProbes is the probes .ucm/stats gives the tier named name.
func tierProbes(t *testing.T, d *daemon, name string) float64 {
	t.Helper()
	for _, tier := range statsOf(t, d)["tiers"].([]any) {
		if tm := tier.(map[string]any); tm["name"] == name {
			p, _ := tm["probes"].(float64)
			return p
		}
	}
	return 0
}
