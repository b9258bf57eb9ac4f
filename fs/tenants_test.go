package fs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/fs/scratch"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/ucmfs/ucmfs/vfs"
	"golang.org/x/sys/unix"
)

// Tenants of one mount: what one user does leaves the others' files,
// and the daemon's resources, alone.

// TestStagingMissNotCached: another user's lookup of a staging name that
// a writer holds gets ENOENT (only the writer's user sees a staging
// file), and the kernel keeps no miss of it: its directory cache is
// every user's, so a cached miss would hide the file from its writer.
func TestStagingMissNotCached(t *testing.T) {
	m := newOpenMount(t, Options{})
	key, data := testBlock("ucmb", 1, 4096)
	for _, model := range []string{"ucmb", "vllm"} {
		if err := os.Mkdir(m.path(model), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(m.path(model), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Setxattr(m.path("vllm"), "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	for _, staging := range []string{m.keyPath(key) + ".tmp", m.path("vllm", "blk.bin_77.tmp")} {
		f, err := os.OpenFile(staging, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("stat", staging)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "No such file") {
			t.Fatalf("another user's stat of %s: %v %s, want ENOENT", staging, err, out)
		}
		if _, err := os.Stat(staging); err != nil {
			t.Errorf("the writer's stat right after: %v (a miss was cached for everyone)", err)
		}
	}
}

// TestModelsPerUserBounded: a user other than root makes at most
// MaxModelsPerUser models on a shared mount; the next mkdir fails with
// EDQUOT, and root is not bounded.
func TestModelsPerUserBounded(t *testing.T) {
	m := sharedMount(t, store.Options{MaxModelsPerUser: 2})
	mkdirAs := func(name string) error {
		cmd := exec.Command("mkdir", m.path(name))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	for _, name := range []string{"u1", "u2"} {
		if err := mkdirAs(name); err != nil {
			t.Fatalf("model %s of another user: %v", name, err)
		}
	}
	if err := mkdirAs("u3"); err == nil || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("a third model of that user: %v, want EDQUOT (Disk quota exceeded)", err)
	}
	for _, name := range []string{"r1", "r2", "r3"} {
		if err := os.Mkdir(m.path(name), 0o755); err != nil {
			t.Fatalf("root's model %s: %v", name, err)
		}
	}
}

// TestScratchBoundedAndOwned: the private entries of a ucm-posix model
// (UCM's GC lease files) belong to who made them, and one cannot grow past
// scratch.MaxFile: they live in the memory tier's tmpfs, which the blocks
// need.
func TestScratchBoundedAndOwned(t *testing.T) {
	m := newOpenMount(t, Options{Passthrough: true})
	if err := os.Mkdir(m.path("ucm"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(m.path("ucm"), 0o777)
	if err := unix.Setxattr(m.path("ucm"), "user.ucm.layout", []byte("ucm-posix"), 0); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "mkdir \"$1/.ucm_gc.lock\" && echo beat > \"$1/.ucm_gc.checktime\"", "sh", m.path("ucm"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("another user's lease: %v\n%s", err, out)
	}
	for _, name := range []string{".ucm_gc.lock", ".ucm_gc.checktime"} {
		fi, err := os.Stat(m.path("ucm", name))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != otherUID || st.Gid != otherGID {
			t.Errorf("%s is %d:%d, want its maker's %d:%d", name, st.Uid, st.Gid, otherUID, otherGID)
		}
	}
	f, err := os.OpenFile(m.path("ucm", ".big"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, scratch.MaxFile+1)); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("a private file past %d bytes: %v, want EFBIG", scratch.MaxFile, err)
	}
	if err := f.Truncate(64 << 20); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("a truncate to 64 MiB: %v, want EFBIG", err)
	}
}

// TestDirsBounded: in a files model others may write in, one user's
// mkdirs make at most its share of the mount's directories (EDQUOT past
// it), everyone's at most the bound (ENOSPC); an rmdir gives one back.
// Directories are a resource: each costs the daemon memory and every
// directory tier an inode.
func TestDirsBounded(t *testing.T) {
	m := sharedMount(t, store.Options{MaxDirs: 6, MaxDirsPerUser: 3})
	openModel(t, m, "eng", "files")
	as := func(args ...string) error {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	if err := as("mkdir", "-p", m.path("eng", "a", "b", "c")); err != nil {
		t.Fatalf("three directories of another user: %v", err)
	}
	if err := as("mkdir", m.path("eng", "a", "d")); err == nil || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("a fourth: %v, want EDQUOT (Disk quota exceeded)", err)
	}
	for _, d := range []string{"r1", "r2", "r3"} {
		if err := os.Mkdir(m.path("eng", d), 0o755); err != nil {
			t.Fatalf("root's directory %s: %v", d, err)
		}
	}
	if err := os.Mkdir(m.path("eng", "r4"), 0o755); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("past the mount's bound: %v, want ENOSPC", err)
	}
	if err := as("rmdir", m.path("eng", "a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	if err := as("mkdir", m.path("eng", "a", "d")); err != nil {
		t.Fatalf("after an rmdir: %v", err)
	}
}

// sharedMount mounts a memory tier over an nvme tier with --allow-other
// where another user (otherUID) can reach it, with the store options
// sopts; it skips without root, which running as that user needs.
func sharedMount(t *testing.T, sopts store.Options) *testMount {
	t.Helper()
	return sharedMountOf(t, newTestStack(t), sopts)
}

// sharedMountOf is sharedMount over the stack st.
func sharedMountOf(t *testing.T, st *tiers.Stack, sopts store.Options) *testMount {
	t.Helper()
	requireFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: another user makes what the test bounds")
	}
	dir := t.TempDir()
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	return mountAt(t, mnt, st, Options{AllowOther: true}, sopts)
}

// TestScratchBudget: the private entries of a ucm-posix model live in the
// memory tier's tmpfs, so what one user's take is bounded (EDQUOT past
// its share; before, another user filled the tmpfs and every user's
// writes failed with ENOSPC); a file unlinked while open keeps its charge
// until its last close, and the charge goes with it.
func TestScratchBudget(t *testing.T) {
	m := sharedMount(t, store.Options{})
	openModel(t, m, "ucm", "ucm-posix")
	// As another user: 1 MB files in the lease directory until a write
	// fails; then, with eight of them held open and unlinked, one more;
	// then, all closed, one more again.
	script := `
import errno, os, sys
d = sys.argv[1] + "/.ucm_gc.lock"
os.mkdir(d)
def fill(name):
    with open(os.path.join(d, name), "wb") as f:
        f.write(b"\0" * 1000000)
made = 0
try:
    while True:
        fill("f%d" % made)
        made += 1
except OSError as e:
    print("made", made, errno.errorcode[e.errno])
os.unlink(os.path.join(d, "f%d" % made))
held = [open(os.path.join(d, "f%d" % i), "rb") for i in range(made)]
for i in range(made):
    os.unlink(os.path.join(d, "f%d" % i))
try:
    fill("again")
    print("held: made")
except OSError as e:
    print("held:", errno.errorcode[e.errno])
    os.unlink(os.path.join(d, "again"))
for f in held:
    f.close()
fill("again")
print("closed: made")
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, m.path("ucm")) // the system one: another user runs it
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherGID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := fmt.Sprintf("made %d EDQUOT\nheld: EDQUOT\nclosed: made\n", vfs.MaxScratchPerUser/1003520)
	if string(out) != want {
		t.Fatalf("another user's private files:\n%s\nwant\n%s", out, want)
	}
	if err := os.WriteFile(m.path("ucm", ".ucm_gc.config"), make([]byte, 1000000), 0o644); err != nil {
		t.Fatalf("root's private file beside them: %v", err)
	}
	if err := os.Symlink("/etc/passwd", m.path("ucm", ".ucm_gc.lock", "link")); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("a symlink among them: %v, want EPERM", err)
	}
}

// openModel makes the model name of layout on m, which every user may
// write in (mode 0777).
func openModel(t *testing.T, m *testMount, name, layout string) {
	t.Helper()
	if err := os.Mkdir(m.path(name), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(m.path(name), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(m.path(name), "user.ucm.layout", []byte(layout), 0); err != nil {
		t.Fatal(err)
	}
}
