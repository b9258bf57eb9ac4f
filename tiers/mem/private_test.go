package mem_test

import (
	"os"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/mem"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// TestMemPrivateTmpfs: as root, the memory tier lives on a tmpfs of its
// own that no mount table shows, and it serves files like any other.
func TestMemPrivateTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a private tmpfs needs root")
	}
	before, _ := os.ReadFile("/proc/self/mounts")
	m := newMem(t, mem.Config{Capacity: 4 << 20})
	if !strings.HasPrefix(m.Dir(), "/proc/self/fd/") {
		t.Fatalf("memory tier dir %q: want a private tmpfs", m.Dir())
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.Dir(), &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Fatalf("statfs %s: type %x, %v", m.Dir(), st.Type, err)
	}
	after, _ := os.ReadFile("/proc/self/mounts")
	if strings.Count(string(after), "ucmfs-mem") != strings.Count(string(before), "ucmfs-mem") {
		t.Fatalf("the private tmpfs shows in the mount table:\n%s", after)
	}
	k := tiertest.Key("m", 1)
	data := tiertest.Payload(1, 3<<20)
	tiertest.Put(t, m, k, data, tier.CommitOptions{})
	if got := tiertest.Read(t, m, k); string(got) != string(data) {
		t.Fatal("bytes read back differ from those written")
	}
}
