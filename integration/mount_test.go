package integration

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMountDefaults mounts as a new user would, with no --tier: the
// default nvme tier goes to $XDG_CACHE_HOME/ucmfs/nvme, the ready line
// says so, `ucmfs stats` reads the mount, and SIGTERM exits 0 with the
// block on the tier and nothing left mounted.
func TestMountDefaults(t *testing.T) {
	requireFUSE(t)
	dir := testDir(t)
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	cache := filepath.Join(dir, "cache")
	d := startUCM(t, mountOpts{Mnt: mnt, Bare: true, Args: []string{"--memory", "64MiB", "--memory-dir", memDir},
		Env: []string{"XDG_CACHE_HOME=" + cache}})
	if err := d.waitReady(); err != nil {
		t.Fatalf("%v\n%s", err, d.out.String())
	}
	tier := filepath.Join(cache, "ucmfs", "nvme")
	ready := regexp.MustCompile(`(?m)^ucmfs: mounted on ` + regexp.QuoteMeta(mnt) +
		` \(memory 64\.0 MiB, tiers: nvme:` + regexp.QuoteMeta(tier) + `, passthrough (on|off), FUSE over (/dev/fuse|io_uring)\)$`)
	if !ready.MatchString(d.out.String()) {
		t.Errorf("ready line not found in:\n%s", d.out.String())
	}
	if fi, err := os.Stat(tier); err != nil || !fi.IsDir() {
		t.Fatalf("default tier directory %s: %v", tier, err)
	}

	if err := os.Mkdir(d.path("org--Model-7B"), 0o755); err != nil {
		t.Fatal(err)
	}
	id := testIDs("defaults", 1)[0]
	mustPy(t, "put", mnt, "org--Model-7B", id, "--fsync")
	mustPy(t, "verify", tier, "org--Model-7B", id) // fsync: durable on the tier now

	out, err := exec.Command(ucmfsBin, "stats", mnt).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nvme") || !strings.Contains(string(out), "hits") {
		t.Errorf("ucmfs stats: %v\n%s", err, out)
	}
	raw, err := exec.Command(ucmfsBin, "stats", "--json", mnt).Output()
	var st struct {
		Tiers []struct {
			Name   string `json:"name"`
			Blocks int64  `json:"blocks"`
		} `json:"tiers"`
	}
	if err != nil || json.Unmarshal(raw, &st) != nil || len(st.Tiers) != 2 || st.Tiers[0].Name != "mem" || st.Tiers[1].Name != "nvme" {
		t.Errorf("ucmfs stats --json: %v %s", err, raw)
	}

	if code := d.stop(); code != 0 {
		t.Errorf("SIGTERM: exit %d\n%s", code, d.out.String())
	}
	if isMounted(mnt) {
		t.Error("still mounted after SIGTERM")
	}
	mustPy(t, "verify", tier, "org--Model-7B", id)
}

// TestMountRefusesBusy: a second daemon on a mounted directory, and a
// daemon on a non-empty directory, exit 1 with a clear message while the
// first mount keeps serving.
func TestMountRefusesBusy(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	for _, c := range []struct{ mnt, want string }{
		{d.Mnt, "already mounted"},
		{filepath.Dir(d.Tier), "not empty"},
	} {
		out, err := exec.Command(ucmfsBin, "mount", "--memory", "16MiB", "--memory-dir", memDir,
			"--tier", "nvme:"+filepath.Join(testDir(t), "t2"), c.mnt).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), c.want) {
			t.Errorf("mount on %s: %v, output %q; want exit 1 and %q", c.mnt, err, out, c.want)
		}
	}
	if _, err := os.ReadFile(d.path(".ucm", "stats")); err != nil {
		t.Errorf("the first mount stopped serving: %v", err)
	}
}

// TestExternalUmount: `umount MNT` ends the daemon with status 0 after it
// wrote its dirty blocks to the tier.
func TestExternalUmount(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("umount", 20)
	mustPy(t, append([]string{"put", d.Mnt, "m"}, ids...)...)
	if err := unix.Unmount(d.Mnt, 0); err != nil {
		t.Fatalf("umount: %v", err)
	}
	if code := d.wait(); code != 0 {
		t.Errorf("exit %d after an external umount\n%s", code, d.out.String())
	}
	mustPy(t, append([]string{"verify", d.Tier, "m"}, ids...)...)
}

// TestSigtermBusyMount: SIGTERM while another process holds a directory
// of the mount open. From the signal on a create fails with EROFS while
// reads keep working; the busy mount is detached lazily, and the daemon
// exits 0 once the directory is closed, with the block on its tier.
func TestSigtermBusyMount(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("busy", 1)
	model, err := os.Open(d.path("m")) // keeps the mount busy
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	mfd := int(model.Fd())
	rel := func(id string) string { return id[:2] + "/" + id + ".bin" }
	create := func(id string) error {
		fd, err := unix.Openat(mfd, rel(id), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o444)
		if err != nil {
			return err
		}
		_, werr := unix.Write(fd, goodBlock(id))
		return errors.Join(werr, unix.Close(fd))
	}
	if err := create(ids[0]); err != nil {
		t.Fatalf("publish before the signal: %v", err)
	}

	// Creates succeed until the daemon has handled the signal, then fail
	// with EROFS.
	d.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(exitWait)
	for i := 0; ; i++ {
		err := create(testIDs("busy-after", i+1)[i])
		if errors.Is(err, syscall.EROFS) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("create %d after SIGTERM: %v, want success or EROFS (and EROFS in time)", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	fd, err := unix.Openat(mfd, rel(ids[0]), unix.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("read during the shutdown: %v", err)
	}
	buf := make([]byte, 2*len(goodBlock(ids[0])))
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || string(buf[:n]) != string(goodBlock(ids[0])) {
		t.Errorf("read during the shutdown: %d bytes, %v", n, err)
	}
	model.Close()
	if code := d.wait(); code != 0 {
		t.Errorf("exit %d after SIGTERM on a busy mount\n%s", code, d.out.String())
	}
	if isMounted(d.Mnt) {
		t.Error("still mounted")
	}
	if got, err := os.ReadFile(blockPath(d.Tier, "m", ids[0])); err != nil || string(got) != string(goodBlock(ids[0])) {
		t.Errorf("block on the tier after the shutdown: %v", err)
	}
}

// TestNoPassthrough: with --no-passthrough the daemon serves reads and
// writes itself, and says so on the ready line.
func TestNoPassthrough(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--no-passthrough"}})
	if !strings.Contains(d.out.String(), "passthrough off,") {
		t.Errorf("ready line does not say passthrough off:\n%s", d.out.String())
	}
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("nopt", 8)
	mustPy(t, append([]string{"put", d.Mnt, "m", "--seed", "2"}, ids...)...)
	mustPy(t, append([]string{"verify", d.Mnt, "m", "--seed", "2"}, ids...)...)
	if got := mustPy(t, "layer", d.Mnt, "m", ids[3], "3"); !strings.HasPrefix(got, "8192 ") {
		t.Errorf("layer 3: %q, want 8192 bytes", got)
	}
}

// TestConfigFileMemoryOnly mounts from a YAML file with no directory
// tier (a volatile cache): the ready line shows its settings, blocks are
// served from memory, and SIGTERM exits 0 with nothing to flush.
func TestConfigFileMemoryOnly(t *testing.T) {
	conf := filepath.Join(testDir(t), "ucmfs.yaml")
	yaml := "memory: 32MiB\nmemory_dir: " + memDir + "\ntiers: []\nnegative_ttl: 100ms\nlog_level: warn\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	d := mountUCM(t, mountOpts{Bare: true, Args: []string{"--config", conf}})
	if !strings.Contains(d.out.String(), "(memory 32.0 MiB, tiers: none, passthrough ") {
		t.Errorf("ready line:\n%s", d.out.String())
	}
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("memonly", 4)
	mustPy(t, append([]string{"put", d.Mnt, "m", "--fsync"}, ids...)...)
	mustPy(t, append([]string{"verify", d.Mnt, "m"}, ids...)...)
	if got := mustPy(t, "xattrs", blockPath(d.Mnt, "m", ids[0])); !strings.Contains(got, "user.ucm.tiers=mem\n") {
		t.Errorf("xattrs of a memory-only block:\n%s", got)
	}
	if code := d.stop(); code != 0 {
		t.Errorf("SIGTERM: exit %d\n%s", code, d.out.String())
	}
}

// TestUmountCommandReports: `ucmfs umount` flushes the blocks only in
// memory, unmounts, and ends with a line that says what it did; the
// daemon exits 0 and the blocks are on the tier.
func TestUmountCommandReports(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--dirty-expire", "1h"}})
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("umount-report", 5)
	mustPy(t, append([]string{"put", d.Mnt, "m"}, ids...)...)
	out, err := exec.Command(ucmfsBin, "umount", d.Mnt).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "flushed 5 blocks") || !strings.Contains(string(out), "unmounted "+d.Mnt) {
		t.Fatalf("ucmfs umount: %v\n%s", err, out)
	}
	if code := d.wait(); code != 0 {
		t.Errorf("exit %d after ucmfs umount\n%s", code, d.out.String())
	}
	mustPy(t, append([]string{"verify", d.Tier, "m"}, ids...)...)
}
