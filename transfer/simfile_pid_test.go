package transfer

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/gpu"
)

// sleeper is a process running as uid:gid with groups, in dir.
func sleeper(uid, gid uint32, groups []uint32, dir string) *exec.Cmd {
	cmd := exec.Command("sleep", "60")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups}}
	return cmd
}

// startAs starts a new process of mk under pid, which has just ended:
// the kernel's last pid (/proc/sys/kernel/ns_last_pid) is set to the one
// before. Another fork of the machine may take it first: it tries again,
// and skips the test when that keeps happening.
func startAs(t *testing.T, pid int, mk func() *exec.Cmd) *exec.Cmd {
	t.Helper()
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("cannot choose the next pid: %v", err)
		}
		cmd := mk()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == pid {
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			return cmd
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Skipf("pid %d was taken by other processes 200 times", pid)
	return nil
}

// TestGPUSimPidReused: register sim resolves its path as the process
// that opened .ucm/gpu, whose credentials, root and working directory are
// captured by the pid the kernel named at open (line.Creds). When that
// process is gone and its pid belongs to another process (of another
// user, in a directory and a group the opener has not), the capture is
// refused; nothing opens the opener's file through the new process's
// working directory or with its groups.
func TestGPUSimPidReused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: processes of other users, and the choice of a pid")
	}
	const caller, other, gid, group = 65534, 1234, 65533, 4242
	dir, err := os.MkdirTemp("/tmp", "ucmfs-sim-pid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Only members of group may search dir; the region's file is the
	// caller's own.
	if err := os.Chown(dir, 0, group); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	region := filepath.Join(dir, "region")
	if err := os.WriteFile(region, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(region, caller, gid); err != nil {
		t.Fatal(err)
	}
	spec := gpu.RegionSpec{Size: 4096}
	open := func(pid int) error {
		f, err := openSimAs(line.Caller{Uid: caller, Gid: gid, Pid: uint32(pid)}, "region", spec)
		if f != nil {
			f.Close()
		}
		return err
	}
	// The setup holds: a process of the caller in group, working in dir,
	// registers its region.
	member := sleeper(caller, gid, []uint32{group}, dir)
	if err := member.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { member.Process.Kill(); member.Wait() })
	if err := open(member.Process.Pid); err != nil {
		t.Fatalf("the caller's own process in dir: %v", err)
	}

	// The caller's process, in no group, ends; its pid goes to a process
	// of another user that is in group and works in dir.
	gone := sleeper(caller, gid, nil, "/")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	pid := gone.Process.Pid
	gone.Process.Kill()
	gone.Wait()
	startAs(t, pid, func() *exec.Cmd { return sleeper(other, gid, []uint32{group}, dir) })
	if err := open(pid); !errors.Is(err, line.ErrAccess) {
		t.Fatalf("register sim by pid %d, now another user's process: %v, want EACCES", pid, err)
	}
}
