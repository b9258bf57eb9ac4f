package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// helperPath is where mount(8) of util-linux looks for the helper of type
// fuse.ucmfs (its search path is /sbin, /sbin/fs.d, /sbin/fs).
const helperPath = "/sbin/mount.fuse.ucmfs"

// TestInstallAndMountLikeADisk installs with `make install` into a
// temporary DESTDIR, checks what it put where, then mounts with the real
// mount(8): `mount -t fuse.ucmfs` with options, and an fstab line through
// `mount -T FSTAB MNT` (so /etc/fstab is not touched). Each time it writes
// blocks, runs the installed `ucmfs umount` and checks that every block is
// on the nvme tier, intact. For the live mounts the helper is linked at
// /sbin/mount.fuse.ucmfs for the test's duration (root only). The fstab
// mount runs once more with an empty environment, as at boot.
func TestInstallAndMountLikeADisk(t *testing.T) {
	requireFUSE(t)
	requireTool(t, "make")
	requireTool(t, "mount")
	requireTool(t, "python3")
	if os.Geteuid() != 0 {
		t.Skip("needs root: mount(8) runs helpers from /sbin only")
	}
	dir := testDir(t)
	dest := filepath.Join(dir, "dest")
	make := exec.Command("make", "install", "DESTDIR="+dest, "PREFIX=/usr", "BIN="+filepath.Join(dir, "build", "ucmfs"))
	make.Dir = ".."
	if out, err := make.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	bin := filepath.Join(dest, "usr", "bin", "ucmfs")
	if target, err := os.Readlink(filepath.Join(dest, helperPath)); err != nil || target != "/usr/bin/ucmfs" {
		t.Errorf("helper: %q, %v; want a link to /usr/bin/ucmfs", target, err)
	}
	if man, err := os.ReadFile(filepath.Join(dest, "usr/share/man/man8/ucmfs.8")); err != nil || !strings.HasPrefix(string(man), ".TH UCMFS 8") {
		t.Errorf("man page: %v", err)
	}
	unit, err := os.ReadFile(filepath.Join(dest, "usr/lib/systemd/system/ucmfs@.service"))
	if err != nil || !strings.Contains(string(unit), "\nType=notify\n") || !strings.Contains(string(unit), "\nExecStart=/usr/bin/ucmfs mount ") {
		t.Errorf("unit: %v\n%s", err, unit)
	}
	verifyUnit(t, dir, string(unit), bin)

	if _, err := os.Lstat(helperPath); err == nil {
		t.Skipf("%s exists (ucmfs is installed here): not replacing it", helperPath)
	}
	if err := os.Symlink(bin, helperPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(helperPath) })

	t.Run("mount -t", func(t *testing.T) {
		mnt, tier := mountPair(t)
		opts := "memory=64MiB,memory_dir=" + memDir + ",tier=nvme:" + tier + ",log_level=warn,log_file=" +
			filepath.Join(filepath.Dir(mnt), "log") + ",rw,nosuid,nodev,noatime,_netdev,allow_other"
		mustRun(t, "mount", "-t", "fuse.ucmfs", "ucmfs", mnt, "-o", opts)
		writeAndUmount(t, bin, mnt, tier)
	})
	t.Run("fstab", func(t *testing.T) {
		mnt, tier := mountPair(t)
		fstab := filepath.Join(filepath.Dir(mnt), "fstab")
		line := "ucmfs " + mnt + " fuse.ucmfs memory=64MiB,memory_dir=" + memDir + ",tier=nvme:" + tier +
			",log_level=warn,log_file=" + filepath.Join(filepath.Dir(mnt), "log") + ",defaults,_netdev,nofail 0 0\n"
		if err := os.WriteFile(fstab, []byte("# a test fstab\n"+line), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, "mount", "-T", fstab, mnt)
		writeAndUmount(t, bin, mnt, tier)
	})
	// At boot mount(8) runs with no environment to speak of (no PATH,
	// HOME or USER): the helper and the daemon it starts must not need one.
	t.Run("fstab, empty environment", func(t *testing.T) {
		mnt, tier := mountPair(t)
		fstab := filepath.Join(filepath.Dir(mnt), "fstab")
		line := "ucmfs " + mnt + " fuse.ucmfs memory=64MiB,memory_dir=" + memDir + ",tier=nvme:" + tier +
			",log_level=warn,log_file=" + filepath.Join(filepath.Dir(mnt), "log") + ",defaults,_netdev,nofail 0 0\n"
		if err := os.WriteFile(fstab, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		mount, err := exec.LookPath("mount")
		if err != nil {
			t.Fatal(err)
		}
		mustRun(t, "env", "-i", mount, "-T", fstab, mnt)
		writeAndUmount(t, bin, mnt, tier)
	})
}

// verifyUnit runs systemd-analyze verify on the installed unit (the
// binary path pointed at the DESTDIR copy) when systemd-analyze exists.
func verifyUnit(t *testing.T, dir, unit, bin string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("no systemd-analyze here: the unit is not verified")
		return
	}
	path := filepath.Join(dir, "ucmfs@mnt-kv.service")
	os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/bin/ucmfs", bin)), 0o644)
	if out, err := exec.Command("systemd-analyze", "verify", "--man=no", path).CombinedOutput(); err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// mountPair makes an empty mount point and a tier path for one subtest;
// its cleanup detaches a mount left behind.
func mountPair(t *testing.T) (mnt, tier string) {
	dir := testDir(t)
	mnt, tier = filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	os.Mkdir(mnt, 0o755)
	t.Cleanup(func() {
		if isMounted(mnt) {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
		waitDaemonGone(t, mnt)
	})
	return mnt, tier
}

// writeAndUmount checks the mount helper's mount at mnt, writes blocks,
// unmounts with `ucmfs umount` and checks every block on the tier.
func writeAndUmount(t *testing.T, bin, mnt, tier string) {
	t.Helper()
	if !isMounted(mnt) {
		t.Fatalf("mount returned but %s is not mounted", mnt)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, ".ucm", "stats")); err != nil {
		t.Fatalf("the helper returned before the mount was ready: %v", err)
	}
	if err := os.Mkdir(filepath.Join(mnt, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	ids := testIDs(t.Name(), 20)
	mustPy(t, append([]string{"put", mnt, "m"}, ids...)...)
	mustRun(t, bin, "umount", mnt)
	if isMounted(mnt) {
		t.Fatalf("ucmfs umount left %s mounted", mnt)
	}
	for _, id := range ids {
		if err := format.VerifyFile(blockPath(tier, "m", id)); err != nil {
			t.Errorf("block %s on the tier after ucmfs umount: %v", id, err)
		}
	}
	waitDaemonGone(t, mnt)
}

// waitDaemonGone waits until no `ucmfs mount ... MNT` process is left (the
// daemon exits on its own after an unmount).
func waitDaemonGone(t *testing.T, mnt string) {
	t.Helper()
	deadline := time.Now().Add(exitWait)
	for daemonPID(mnt) != 0 {
		if time.Now().After(deadline) {
			t.Errorf("the daemon of %s did not exit after the unmount; killing it", mnt)
			unix.Kill(daemonPID(mnt), unix.SIGKILL)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// daemonPID is the pid of a process whose command line is `ucmfs mount
// ... mnt`, or 0.
func daemonPID(mnt string) int {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if err == nil && len(args) > 2 && args[1] == "mount" && args[len(args)-1] == mnt {
			return pid
		}
	}
	return 0
}

// mustRun runs a command and fails the test on a non-zero exit.
func mustRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestMountBackground: `ucmfs mount --background` returns once the mount
// is ready, leaves the daemon running, and `ucmfs umount` ends it with
// every block on the tier. A mount that cannot start returns its error.
func TestMountBackground(t *testing.T) {
	requireFUSE(t)
	requireTool(t, "python3")
	mnt, tier := mountPair(t)
	log := filepath.Join(filepath.Dir(mnt), "log")
	mustRun(t, ucmfsBin, "mount", "--background", "--memory", "64MiB", "--memory-dir", memDir, "--tier", "nvme:"+tier,
		"--log-level", "warn", "--log-file", log, mnt)
	writeAndUmount(t, ucmfsBin, mnt, tier)

	busy := filepath.Join(filepath.Dir(mnt), "busy")
	os.MkdirAll(filepath.Join(busy, "something"), 0o755)
	out, err := exec.Command(ucmfsBin, "mount", "-d", "--memory-only", "--memory-dir", memDir, "--log-file", log, busy).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not empty") {
		t.Errorf("background mount on a non-empty directory: %v\n%s", err, out)
	}
}
