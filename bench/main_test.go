package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

var (
	// diskDir is on the disk that holds the tier directories (ext4 here):
	// mount points, nvme tiers and the nvme baseline.
	diskDir string
	// shmDir is on /dev/shm: the tmpfs baseline. (The daemons take the
	// default memory tier, a private tmpfs of their own, as users get it.)
	shmDir string
	// fuseErr is why FUSE cannot be used here, or nil.
	fuseErr error
)

func TestMain(m *testing.M) {
	if first, ok := os.LookupEnv(readerEnv); ok {
		os.Exit(readerChild(first)) // a reader process of BenchmarkMountRead2MiB4Procs
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if diskDir, err = os.MkdirTemp(os.Getenv("UCMFS_BENCH_DISK"), "ucmfs-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(diskDir)
	shm := os.Getenv("UCMFS_BENCH_SHM")
	if shm == "" {
		shm = "/dev/shm"
	}
	if shmDir, err = os.MkdirTemp(shm, "ucmfs-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, "no tmpfs for the memory tier and the baseline:", err)
		return 1
	}
	defer os.RemoveAll(shmDir)
	fuseErr = fuseUsable()
	code := m.Run()
	stopKVSubscriber()
	if err := stopAll(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	if err := stopCServers(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	tierFS.detach()
	if left := mountsUnder(diskDir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: mounts left behind: %s\n", strings.Join(left, ", "))
		for _, mnt := range left {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
		code = 1
	}
	return code
}

// ucmfsBinary is the ucmfs binary the daemons run: UCMFS_BENCH_BIN, or one
// built from this tree on first use (so `go test ./...`, where every
// benchmark and the scale run skip, builds nothing).
var ucmfsBinary = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("UCMFS_BENCH_BIN"); bin != "" {
		return bin, nil
	}
	bin := filepath.Join(diskDir, "ucmfs")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/ucmfs/ucmfs/cmd/ucmfs").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building ucmfs: %w\n%s", err, out)
	}
	return bin, nil
})

// fuseUsable reports why this process cannot mount FUSE, or nil.
func fuseUsable() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// requireFUSE skips without FUSE, or fails when UCMFS_REQUIRE_FUSE=1.
func requireFUSE(tb testing.TB) {
	tb.Helper()
	if fuseErr == nil {
		return
	}
	if os.Getenv("UCMFS_REQUIRE_FUSE") == "1" {
		tb.Fatalf("UCMFS_REQUIRE_FUSE=1 but /dev/fuse cannot be opened: %v", fuseErr)
	}
	tb.Skipf("no FUSE here (/dev/fuse: %v)", fuseErr)
}

// mountsUnder lists the mount points in /proc/self/mountinfo at or below
// dir.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mnt := unescapeOctal(f[4])
		if mnt == dir || strings.HasPrefix(mnt, dir+"/") {
			out = append(out, mnt)
		}
	}
	return out
}

// unescapeOctal undoes the \040-style escapes of /proc/self/mountinfo.
func unescapeOctal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// newDir makes a fresh directory under parent.
func newDir(tb testing.TB, parent, name string) string {
	tb.Helper()
	dir, err := os.MkdirTemp(parent, name+"-")
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}
