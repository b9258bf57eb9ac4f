package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Real distributed filesystems under a shared tier: a single-node CephFS
// and a GlusterFS volume on loopback, started by the scripts of
// deploy/testfs once per package run (the first test that asks) and
// stopped when the run ends (stopSharedFS, from TestMain). Each has three
// client mounts, one per host: hosts A, B and C never share a client
// cache, as daemons on three machines would not.

// sharedFS is one running filesystem and its client mounts.
type sharedFS struct {
	name   string   // "cephfs", "glusterfs"
	script string   // its deploy/testfs script
	dir    string   // the state directory the script owns
	mnts   []string // the client mounts: host A, B, C
	err    error    // why it did not start
}

var (
	sharedFSMu   sync.Mutex
	sharedFSRuns = map[string]*sharedFS{}
)

// sharedFSPackages are the Debian packages each filesystem needs, and a
// command of each that says whether they are installed.
var sharedFSPackages = map[string][]string{
	"cephfs":    {"ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-fuse", "ceph", "monmaptool"},
	"glusterfs": {"glusterd", "glusterfs", "gluster"},
}

// sharedFSNames are the filesystems the matrix runs on.
var sharedFSNames = []string{"cephfs", "glusterfs"}

// needSharedFS returns the running filesystem name, started on first use.
// It skips the test where its packages are missing, unless CI=true or
// UCMFS_REQUIRE_FUSE=1 (.ci/run installs them): then it fails.
func needSharedFS(t *testing.T, name string) *sharedFS {
	t.Helper()
	requireFUSE(t)
	for _, c := range sharedFSPackages[name] {
		if _, err := exec.LookPath(c); err != nil {
			if os.Getenv("CI") == "true" || os.Getenv("UCMFS_REQUIRE_FUSE") == "1" {
				t.Fatalf("%s: %s is not installed (.ci/run installs it)", name, c)
			}
			t.Skipf("%s: %s is not installed (apt-get install the packages .ci/run names to run this test)", name, c)
		}
	}
	sharedFSMu.Lock()
	defer sharedFSMu.Unlock()
	fs := sharedFSRuns[name]
	if fs == nil {
		fs = startSharedFS(name)
		sharedFSRuns[name] = fs
	}
	if fs.err != nil {
		t.Fatalf("%s: %v", name, fs.err)
	}
	return fs
}

// startSharedFS starts filesystem name under baseDir with three client
// mounts.
func startSharedFS(name string) *sharedFS {
	script, err := filepath.Abs(filepath.Join("..", "deploy", "testfs", name+".sh"))
	if err != nil {
		return &sharedFS{name: name, err: err}
	}
	fs := &sharedFS{name: name, script: script, dir: filepath.Join(baseDir, "fs-"+name)}
	if fs.err = fs.run("start", fs.dir); fs.err != nil {
		return fs
	}
	for _, h := range []string{"a", "b", "c"} {
		mnt := filepath.Join(fs.dir, "mnt", h)
		if fs.err = fs.run("mount", fs.dir, mnt); fs.err != nil {
			return fs
		}
		fs.mnts = append(fs.mnts, mnt)
	}
	return fs
}

// run runs the filesystem's script with args.
func (fs *sharedFS) run(args ...string) error {
	out, err := exec.Command(fs.script, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s%s", filepath.Base(fs.script), strings.Join(args, " "), err, out, fs.logTail())
	}
	return nil
}

// logTail is the end of the filesystem's logs, for a failure.
func (fs *sharedFS) logTail() string {
	logs, _ := filepath.Glob(filepath.Join(fs.dir, "log", "*.log"))
	var b strings.Builder
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if len(data) > 2000 {
			data = data[len(data)-2000:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", l, data)
	}
	return b.String()
}

// mustRun runs the script with args, failing t.
func (fs *sharedFS) mustRun(t *testing.T, args ...string) {
	t.Helper()
	if err := fs.run(args...); err != nil {
		t.Fatal(err)
	}
}

// share makes a new directory for one test on the filesystem and returns
// its path through each host's client mount.
func (fs *sharedFS) share(t *testing.T) []string {
	t.Helper()
	dir, err := os.MkdirTemp(fs.mnts[0], "share-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var out []string
	for _, m := range fs.mnts {
		out = append(out, filepath.Join(m, filepath.Base(dir)))
	}
	return out
}

// stopSharedFS stops every filesystem started in this run.
func stopSharedFS() error {
	sharedFSMu.Lock()
	defer sharedFSMu.Unlock()
	var errs []error
	for _, fs := range sharedFSRuns {
		if err := fs.run("stop", fs.dir); err != nil {
			errs = append(errs, err)
		}
	}
	sharedFSRuns = map[string]*sharedFS{}
	return errors.Join(errs...)
}
