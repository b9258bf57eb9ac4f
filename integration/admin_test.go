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
	if err != nil || strings.Count(string(watch), "TIER") != 2 || !strings.Contains(string(watch), "per second (last") ||
		!regexpMatch(`prefetch promotions\s+30\s`, string(watch)) || strings.Contains(string(watch), "prefetch_promoted") {
		t.Errorf("stats --watch: %v\n%s", err, watch)
	}
}

// regexpMatch reports whether s matches the regular expression re.
func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// TestQuotaCommand: `ucmfs quota` shows a model's quota and use, sets it
// with a size, clears it with none, and a publish past it fails EDQUOT.
func TestQuotaCommand(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	if err := os.Mkdir(d.path("q"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(ucmfsBin, append([]string{"quota", d.Mnt, "q"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ucmfs quota %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run(); !strings.Contains(out, "q: quota none; holds 0 B in 0 blocks") {
		t.Errorf("quota of a new model: %q", out)
	}
	if out := run("1MiB"); !strings.Contains(out, "quota 1.0 MiB (1048576 bytes)") {
		t.Errorf("after setting 1MiB: %q", out)
	}
	ids := testIDs("quota", 2)
	mustPy(t, "put", d.Mnt, "q", ids[0])
	if out := run(); !strings.Contains(out, "in 1 blocks") {
		t.Errorf("after a put: %q", out)
	}
	if out := run("none"); !strings.Contains(out, "quota none") {
		t.Errorf("after none: %q", out)
	}
	if out, err := exec.Command(ucmfsBin, "quota", d.Mnt, "q", "lots").CombinedOutput(); err == nil || !strings.Contains(string(out), "want bytes or a size") {
		t.Errorf("a bad size: %v %q", err, out)
	}
	if out, err := exec.Command(ucmfsBin, "quota", d.Mnt, "nosuch").CombinedOutput(); err == nil || !strings.Contains(string(out), "no such model") {
		t.Errorf("a missing model: %v %q", err, out)
	}
}

// TestDebugBundle: `ucmfs debug MNT -o FILE` writes one .tar.gz with the
// version and kernel settings, the mount's line of the mount table (not
// another daemon's mount's), the mount's .ucm/stats and the daemon's
// command line; for a daemon in the foreground, whose log goes to a
// pipe here, where the log goes; for a --background one, the tail of its
// log file, wherever --log-file put it.
func TestDebugBundle(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	other := mountUCM(t, mountOpts{})
	files := debugBundle(t, d.Mnt)
	for _, w := range []string{"ucmfs ", "enable_uring"} {
		if !strings.Contains(files["version.txt"], w) {
			t.Errorf("version.txt lacks %q:\n%s", w, files["version.txt"])
		}
	}
	if !strings.Contains(files["stats.json"], `"tiers"`) || !strings.Contains(files["daemon.txt"], "mount") || !strings.Contains(files["daemon.txt"], d.Mnt) {
		t.Errorf("stats.json or daemon.txt:\n%s\n%s", files["stats.json"], files["daemon.txt"])
	}
	if mi := files["mountinfo.txt"]; strings.Count(mi, "\n") != 1 || !strings.Contains(mi, " "+d.Mnt+" ") || !strings.Contains(mi, "fuse.ucmfs") || strings.Contains(mi, other.Mnt) {
		t.Errorf("mountinfo.txt: want the one line of %s:\n%s", d.Mnt, mi)
	}
	if lt := files["log-tail.txt"]; !strings.Contains(lt, "standard error, pipe:") || strings.Contains(lt, "/var/log") {
		t.Errorf("log-tail.txt of a foreground daemon logging to a pipe: %q", lt)
	}

	mnt, tier := mountPair(t)
	log := filepath.Join(filepath.Dir(mnt), "daemon.log")
	mustRun(t, ucmfsBin, "mount", "--background", "--memory", "64MiB", "--memory-dir", memDir, "--tier", "nvme:"+tier,
		"--log-level", "info", "--log-file", log, mnt)
	defer mustRun(t, ucmfsBin, "umount", mnt)
	logged, err := os.ReadFile(log)
	if err != nil || len(logged) == 0 {
		t.Fatalf("the background daemon's log %s: %v (%d bytes)", log, err, len(logged))
	}
	if lt := debugBundle(t, mnt)["log-tail.txt"]; !strings.HasPrefix(lt, log+":\n") || !strings.Contains(lt, string(logged)) {
		t.Errorf("log-tail.txt of a --background daemon: %q, want %s's %q", lt, log, logged)
	}
}

// debugBundle runs `ucmfs debug mnt -o FILE` and returns the bundle's
// files by name.
func debugBundle(t *testing.T, mnt string) map[string]string {
	t.Helper()
	out := filepath.Join(testDir(t), "bundle.tar.gz")
	if b, err := exec.Command(ucmfsBin, "debug", mnt, "-o", out).CombinedOutput(); err != nil || !strings.Contains(string(b), "wrote "+out) {
		t.Fatalf("ucmfs debug: %v\n%s", err, b)
	}
	names, err := exec.Command("tar", "-tzf", out).Output()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, name := range strings.Fields(string(names)) {
		b, err := exec.Command("tar", "-xzOf", out, name).Output()
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(name, "ucmfs-debug/")] = string(b)
	}
	return files
}

// TestWarmupFiles: `ucmfs warmup` of a files model takes the files'
// paths in the model, as .ucm/prefetch does, and brings them from the
// nvme tier into memory; a path a request cannot carry is refused.
func TestWarmupFiles(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--default-layout", "files"}})
	paths := []string{"eng_r0/abc/de_g0/one.bin", "eng_r0/abc/de_g0/two.bin", "flat.data"}
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(d.path("fm", p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d.path("fm", p), []byte(strings.Repeat(p, 100)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: %d", code)
	}
	d = mountUCM(t, mountOpts{Tier: d.Tier})
	out, err := exec.Command(ucmfsBin, append([]string{"warmup", d.Mnt, "fm", "absent/x"}, paths...)...).Output()
	if err != nil || strings.TrimSpace(string(out)) != "queued=3 missing=1 promoted=3 failed=0" {
		t.Fatalf("warmup: %v %q", err, out)
	}
	for _, p := range paths {
		if tiers, _ := getxattr(d.path("fm", p), "user.ucm.tiers"); !strings.HasPrefix(tiers, "mem") {
			t.Errorf("%s after warmup is on %q, want mem first", p, tiers)
		}
	}
	for _, bad := range []string{"a b", "../x", "id/with//empty"} {
		if out, err := exec.Command(ucmfsBin, "warmup", d.Mnt, "fm", bad).CombinedOutput(); err == nil || !strings.Contains(string(out), bad) {
			t.Errorf("warmup of %q: %v %s", bad, err, out)
		}
	}
}

// TestWarmupMissingModel: warmup of a model the mount does not have
// prints the error alone (no counts), as quota does.
func TestWarmupMissingModel(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	for _, args := range [][]string{{"warmup", d.Mnt, "nosuch", testIDs("w", 1)[0]}, {"quota", d.Mnt, "nosuch"}} {
		cmd := exec.Command(ucmfsBin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err == nil || len(out) != 0 || !strings.Contains(stderr.String(), "nosuch") {
			t.Errorf("%v: %v, stdout %q, stderr %q; want the error alone", args, err, out, stderr.String())
		}
	}
}
