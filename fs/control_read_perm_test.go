package fs

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/tiers"
)

// askAs sends each request to the control file as uid:gid in one
// session, from another process, and returns the answer lines.
func askAs(t *testing.T, file string, uid, gid uint32, reqs ...string) []string {
	t.Helper()
	ask := `import sys, os
fd = os.open(sys.argv[1], os.O_RDWR)
for req in sys.argv[2:]:
    os.write(fd, (req + "\n").encode())
    print(os.read(fd, 1 << 20).decode().strip())`
	// /usr/bin/python3: a user-local interpreter may not be reachable by
	// the other user.
	cmd := exec.Command("/usr/bin/python3", append([]string{"-c", ask, file}, reqs...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", file, uid, err, out)
	}
	answers := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(answers) != len(reqs) {
		t.Fatalf("%s: %d answers to %d requests: %q", file, len(answers), len(reqs), answers)
	}
	return answers
}

// TestControlContentNeedsRead: in a 0711 model (others may search it,
// not read its files) a member of the control group learns which blocks
// exist, as a stat through the mount tells, but gets neither a block's
// bytes (gpu load) nor scores computed from them (topk): both are EACCES,
// as the kernel refuses to cat the block. In a 0755 model both work.
func TestControlContentNeedsRead(t *testing.T) {
	dev, err := gpu.Open(gpu.Config{Mode: "sim", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	st := newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20, Host: gpu.TierPages{Dev: dev}}, tiers.DirConfig{Kind: "nvme"})
	m := newOpenMountWith(t, st, Options{ControlGroup: "65534", GPU: dev})
	keys := map[string]format.Key{}
	for i, c := range []struct {
		model string
		mode  os.FileMode
	}{{"secret", 0o711}, {"public", 0o755}} {
		if err := os.Mkdir(m.path(c.model), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(m.path(c.model), c.mode); err != nil { // past the umask
			t.Fatal(err)
		}
		k, d := floatBlock(c.model, i, small, uint64(i))
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
		keys[c.model] = k
	}
	if err := openAs(m.keyPath(keys["secret"]), otherUID, controlGID); err == nil {
		t.Fatal("the kernel let another user read a block of the 0711 model")
	}
	if err := openAs(m.keyPath(keys["public"]), otherUID, controlGID); err != nil {
		t.Fatalf("the kernel refused another user a block of the 0755 model: %v", err)
	}

	// The engine's region: a shared-memory file of the other user.
	dir, err := os.MkdirTemp("/dev/shm", "ucmfs-read-perm-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	region := filepath.Join(dir, "region")
	if err := os.WriteFile(region, make([]byte, 1<<16), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, region} {
		if err := os.Chown(p, otherUID, controlGID); err != nil {
			t.Fatal(err)
		}
	}
	q := randomQuery(rand.New(rand.NewPCG(5, 5)), small.heads*small.dim)
	for model, want := range map[string]string{"secret": "err EACCES", "public": "ok"} {
		id := keys[model].ID
		exists := askAs(t, m.path(".ucm", "lookup"), otherUID, controlGID, "exists "+model+" "+id.String())
		if exists[0] != "ok 1 1" {
			t.Errorf("%s: exists: %q, want ok 1 1 (search permission tells which blocks exist)", model, exists[0])
		}
		topk := askAs(t, m.path(".ucm", "topk"), otherUID, controlGID,
			topkLine(model, "mean", "0", 1, small.heads, small.dim, q, []format.ID{id}))
		if !strings.HasPrefix(topk[0], want) {
			t.Errorf("%s: topk: %q, want %s", model, topk[0], want)
		}
		load := askAs(t, m.path(".ucm", "gpu"), otherUID, controlGID,
			fmt.Sprintf("register sim %s %d", region, 1<<16), "load 1 "+model+" "+id.String()+":0")
		if load[0] != "ok region=1" {
			t.Fatalf("%s: register: %q", model, load[0])
		}
		if !strings.HasPrefix(load[1], want) {
			t.Errorf("%s: gpu load: %q, want %s", model, load[1], want)
		}
	}
}
