package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPUSocketControlGroup: with --control-group and the default GPU
// socket (in /run/ucmfs as root), a member of the group reaches the
// socket through .ucm/gpu.sock and passes a descriptor over it, as
// docs/control.md promises (the socket is 0660 with the group): the
// socket's directory lets it through. A user outside the group does not
// connect.
func TestGPUSocketControlGroup(t *testing.T) {
	member, other := newLocalUser(t), newLocalUser(t)
	// The directory as a daemon made it before it knew of control groups
	// (0700), or as a mount without one makes it.
	if err := os.Chmod("/run/ucmfs", 0o700); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	_, opts := sharedMountOpts(t, "--gpu", "sim", "--control-group", member.Name)
	d := mountUCM(t, opts)
	sock, err := os.Readlink(d.path(".ucm", "gpu.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(sock) != "/run/ucmfs" {
		t.Skipf("the default socket is %s, not in /run/ucmfs (not root?)", sock)
	}
	pass := `/usr/bin/python3 -c '
import array, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect:", e.strerror); sys.exit(1)
fd = os.memfd_create("kv")
s.sendmsg([b"register 4096"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
print(s.recv(4096).decode().strip())
' ` + d.path(".ucm", "gpu.sock")
	if out := member.must(t, pass); !strings.HasPrefix(out, "ok token=") {
		t.Errorf("a member of the control group over %s: %q, want ok token=N", sock, out)
	}
	if out, err := other.run(pass); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("a user outside the control group over %s: %v %q, want Permission denied", sock, err, out)
	}
}
