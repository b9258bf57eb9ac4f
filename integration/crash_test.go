package integration

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// listBlocks returns the ids of the .bin files under root/model (a mount
// or a tier directory), by a directory walk of the 256 shards.
func listBlocks(t *testing.T, root, model string) []string {
	t.Helper()
	var ids []string
	for b := 0; b < 256; b++ {
		shard := format.ShardName(byte(b))
		ents, err := os.ReadDir(root + "/" + model + "/" + shard)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatalf("readdir %s/%s: %v", model, shard, err)
		}
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), ".bin"); ok && !strings.HasPrefix(name, ".") {
				ids = append(ids, name)
			}
		}
	}
	return ids
}

// TestKill9Remount kills the daemon with SIGKILL while it holds durable
// (fsync'ed) and dirty blocks. The dead mount answers ENOTCONN and a new
// daemon refuses it until it is detached (umount -l); after the remount
// every fsync'ed block reads back intact and every block present is
// whole: nothing torn.
func TestKill9Remount(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	os.Mkdir(d.path("m"), 0o755)
	durable := testIDs("kill9-durable", 24)
	dirty := testIDs("kill9-dirty", 24)
	mustPy(t, append([]string{"put", d.Mnt, "m", "--fsync", "--seed", "9"}, durable...)...)
	mustPy(t, append([]string{"put", d.Mnt, "m", "--seed", "9"}, dirty...)...)
	d.kill()

	// Cached attributes may still answer a stat; a directory read reaches
	// the (dead) daemon. Over io_uring the kernel tears the rings down
	// after the process is gone, and a request made meanwhile ends with
	// ECONNABORTED or ECANCELED; all three mean a dead mount (cmd/ucmfs
	// deadMount).
	_, err := os.ReadDir(d.path("m"))
	if !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) && !errors.Is(err, syscall.ECANCELED) {
		t.Errorf("readdir on the dead mount: %v, want ENOTCONN (or ECONNABORTED, ECANCELED over io_uring)", err)
	}
	out, err := exec.Command(ucmfsBin, "mount", "--memory-dir", memDir, "--tier", "nvme:"+d.Tier, d.Mnt).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "umount -l") {
		t.Errorf("mount on the dead mount: %v %q; want a refusal that says 'umount -l'", err, out)
	}
	d.detach()

	d2 := mountUCM(t, mountOpts{Mnt: d.Mnt, Tier: d.Tier})
	mustPy(t, append([]string{"verify", d2.Mnt, "m", "--seed", "9"}, durable...)...)
	present := listBlocks(t, d2.Mnt, "m")
	if len(present) < len(durable) {
		t.Errorf("%d blocks after the remount, want at least the %d durable ones", len(present), len(durable))
	}
	mustPy(t, append([]string{"verify", d2.Mnt, "m", "--seed", "9"}, present...)...)

	// The remounted daemon takes new writes and stops cleanly.
	mustPy(t, "put", d2.Mnt, "m", testIDs("kill9-after", 1)[0])
	if code := d2.stop(); code != 0 {
		t.Errorf("SIGTERM after the remount: exit %d", code)
	}
	if out, err := exec.Command(ucmfsBin, "fsck", d.Tier).CombinedOutput(); err != nil {
		t.Errorf("ucmfs fsck of the tier after kill -9 and remount: %v\n%s", err, out)
	}
}

// TestSigtermRemount: every block whose close() returned before SIGTERM
// is on the tier after the daemon exits 0, and readable after a remount.
func TestSigtermRemount(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--memory", "256MiB"}})
	os.Mkdir(d.path("m"), 0o755)
	ids := testIDs("sigterm", 64)
	mustPy(t, append([]string{"put", d.Mnt, "m", "--seed", "15"}, ids...)...)
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, d.out.String())
	}
	if isMounted(d.Mnt) {
		t.Fatal("still mounted after SIGTERM")
	}
	mustPy(t, append([]string{"verify", d.Tier, "m", "--seed", "15"}, ids...)...)
	if got := len(listBlocks(t, d.Tier, "m")); got != len(ids) {
		t.Errorf("tier holds %d blocks, want %d", got, len(ids))
	}

	d2 := mountUCM(t, mountOpts{Mnt: d.Mnt, Tier: d.Tier})
	mustPy(t, append([]string{"verify", d2.Mnt, "m", "--seed", "15"}, ids...)...)
	if got := len(listBlocks(t, d2.Mnt, "m")); got != len(ids) {
		t.Errorf("remount lists %d blocks, want %d", got, len(ids))
	}
}
