package fs

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestEventsOnlyReadableModels: a member of the control group reading
// .ucm/events from the oldest event sees the blocks of a 0755 model and
// none of a 0700 one; root sees both. Each stream ends its run of events
// with an idle line naming the next sequence number.
func TestEventsOnlyReadableModels(t *testing.T) {
	m := newOpenMount(t, Options{ControlGroup: "65534"})
	key, pub := privateAndPublic(t, m)
	read := `import sys, os
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, b"from oldest\n")
out = b""
while b'"idle"' not in out:
    out += os.read(fd, 65536)
sys.stdout.write(out.decode())`
	models := func(uid, gid uint32) map[string]bool {
		cmd := exec.Command("/usr/bin/python3", "-c", read, m.path(".ucm", "events"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf(".ucm/events as %d: %v\n%s", uid, err, out)
		}
		seen := map[string]bool{}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			var l struct{ Type, Model, ID string }
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			if l.Type == "stored" {
				seen[l.Model+"/"+l.ID] = true
			}
		}
		return seen
	}
	priv, open := "private/"+key.ID.String(), "public/"+pub.ID.String()
	if got := models(otherUID, controlGID); got[priv] || !got[open] {
		t.Errorf("another user sees %v: want the 0755 model's block alone", got)
	}
	if got := models(0, 0); !got[priv] || !got[open] {
		t.Errorf("root sees %v: want both blocks", got)
	}
}
