package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNonRootWithoutFusermount mounts as an unprivileged user on a machine
// without the fusermount helper: the error says to install fuse3 (or run
// as root) instead of `exec: "/bin/fusermount": no such file`.
func TestNonRootWithoutFusermount(t *testing.T) {
	requireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to start the daemon as another user")
	}
	for _, name := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(name); err == nil {
			t.Skipf("%s is installed here: the non-root mount would work", name)
		}
		if _, err := os.Stat("/bin/" + name); err == nil {
			t.Skipf("/bin/%s is installed here: the non-root mount would work", name)
		}
	}
	dir := testDir(t)
	for _, d := range []string{baseDir, dir} { // nobody must reach the binary and the mount point
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	os.Chown(mnt, 65534, 65534)
	cmd := exec.Command(ucmfsBin, "mount", "--memory-only", "--memory", "16MiB", "--memory-dir", "/dev/shm", mnt)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("mount as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "apt-get install fuse3") || strings.Contains(string(out), "exec: ") {
		t.Errorf("no install hint:\n%s", out)
	}
}
