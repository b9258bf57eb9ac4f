package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// localUser is a user created for one test (useradd), removed after it.
type localUser struct {
	Name     string
	Uid, Gid uint32
}

// newLocalUser creates a local user with its own group; the test is
// skipped when this is not root or useradd is missing (CI runs as root).
func newLocalUser(t *testing.T) localUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a local user needs root")
	}
	requireTool(t, "useradd")
	name := fmt.Sprintf("ucmit%d", os.Getpid()%100000)
	for i := 0; ; i++ {
		candidate := fmt.Sprintf("%s%c", name, 'a'+i)
		out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/sh", "--user-group", candidate).CombinedOutput()
		if err == nil {
			name = candidate
			break
		}
		if i == 10 || !strings.Contains(string(out), "exists") {
			t.Fatalf("useradd %s: %v\n%s", candidate, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
			t.Errorf("userdel %s: %v\n%s", name, err, out)
		}
		exec.Command("groupdel", name).Run() // gone with the user on most systems
	})
	id := func(flag string) uint32 {
		out, err := exec.Command("id", flag, name).Output()
		if err != nil {
			t.Fatalf("id %s %s: %v", flag, name, err)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(n)
	}
	return localUser{Name: name, Uid: id("-u"), Gid: id("-g")}
}

// run runs a shell script as u; it returns the combined output and the
// exit error.
func (u localUser) run(script string) (string, error) {
	out, err := u.command(script).CombinedOutput()
	return string(out), err
}

// command is a shell running script as u, not started.
func (u localUser) command(script string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/", "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.Uid, Gid: u.Gid, Groups: []uint32{u.Gid}}}
	return cmd
}

// must runs a script as u and fails the test when it fails.
func (u localUser) must(t *testing.T, script string) string {
	t.Helper()
	out, err := u.run(script)
	if err != nil {
		t.Fatalf("as %s: %s: %v\n%s", u.Name, script, err, out)
	}
	return out
}

// publicDir is a directory every user can reach (the test directories
// are 0700): the mount point and tier of a multi-user test.
func publicDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ucmfs-users-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// sharedMountOpts are the options of a mount a second user reaches: its
// mount point and tier in a directory anyone may search, allow_other and
// args.
func sharedMountOpts(t *testing.T, args ...string) (dir string, o mountOpts) {
	t.Helper()
	dir = publicDir(t)
	o = mountOpts{Mnt: filepath.Join(dir, "mnt"), Tier: filepath.Join(dir, "tier"), Args: append([]string{"--allow-other"}, args...)}
	os.Mkdir(o.Mnt, 0o755)
	return dir, o
}
