package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/internal/engineproto"
	"golang.org/x/sys/unix"
)

// The files layout through restarts, kills, replaced files and several
// processes (docs/semantics.md, "The files layout").

// TestFilesKill9 kills the daemon with SIGKILL, cycle after cycle, while
// vLLM's staging files are open and half written and blocks were stored
// since the last flush. After each remount every flushed block loads
// intact, every block present is whole, no staging name is left in the
// tree, and the store goes on; at the end the tier passes fsck.
func TestFilesKill9(t *testing.T) {
	dir := testDir(t)
	mnt, tier := filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	const cycles = 3
	durable := 0
	for cycle := range cycles + 1 {
		d := mountUCM(t, mountOpts{Mnt: mnt, Tier: tier, Args: []string{"--default-layout", "files"}})
		root := d.path("vllm")
		if err := os.Mkdir(root, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		v := &engineproto.VLLM{Root: root, Salt: "kill9", Model: "m", Direct: true}
		if err := v.Setup(); err != nil {
			t.Fatal(err)
		}
		for i := range 12 * cycles {
			ok, err := v.Exists(i)
			if err != nil {
				t.Fatal(err)
			}
			if i < durable && !ok {
				t.Fatalf("cycle %d: flushed block %d is gone", cycle, i)
			}
			if ok {
				if got, err := v.Load(i, engineBlock); err != nil || !bytes.Equal(got, engineData("kill9", i)) {
					t.Fatalf("cycle %d: block %d present but not whole: %v", cycle, i, err)
				}
			}
		}
		noStaging(t, root, cycle)
		if cycle == cycles {
			if code := d.stop(); code != 0 {
				t.Fatalf("SIGTERM: exit %d", code)
			}
			break
		}
		for i := durable; i < durable+6; i++ {
			if err := v.Store(i, engineData("kill9", i)); err != nil {
				t.Fatal(err)
			}
		}
		if got := ctl(t, d.Mnt, "flush", "model vllm"); got != "ok flushed\n" {
			t.Fatalf("flush: %q", got)
		}
		for i := durable + 6; i < durable+12; i++ { // stored, not flushed
			if err := v.Store(i, engineData("kill9", i)); err != nil {
				t.Fatal(err)
			}
		}
		var open []int // staging files half written, open at the kill
		for k := range 3 {
			p := v.Path(1000+k) + "_" + strconv.Itoa(cycle) + ".tmp"
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := unix.Write(fd, engineData("half", k)[:engineBlock/2]); err != nil {
				t.Fatal(err)
			}
			open = append(open, fd)
		}
		durable += 12
		d.kill()
		d.detach()
		for _, fd := range open {
			unix.Close(fd)
		}
		durable -= 6 // the unflushed ones may be lost; they must not be torn
	}
	if out, err := exec.Command(ucmfsBin, "fsck", tier).CombinedOutput(); err != nil {
		t.Errorf("ucmfs fsck of the tier after the kill -9 cycles: %v\n%s", err, out)
	}
}

// noStaging fails when a staging name is left under root.
func noStaging(t *testing.T, root string, cycle int) {
	t.Helper()
	filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && strings.Contains(e.Name(), ".tmp") {
			t.Errorf("cycle %d: staging file %s survived the restart", cycle, p)
		}
		return nil
	})
}

// TestFilesReplaceAndRestart: the files of a tree as an engine's local
// disk: a file renamed over a published one replaces it while a reader of
// the first keeps its bytes and a new open reads the second whole; a file
// unlinked while open goes on reading; a published file renamed into
// another directory is moved with its mtime, a renamed directory with
// what it holds; a lock file takes flock; a log is appended by its own process
// and published at its close; mkdir -p, rmdir, and an empty directory;
// after a restart every file, the empty directory and the layout are
// there.
func TestFilesReplaceAndRestart(t *testing.T) {
	d, mnt, tier := filesMount(t)
	m := d.path("eng")
	sh(t, "mkdir", "-p", m+"/a/b/c", m+"/empty", m+"/gone")
	sh(t, "rmdir", m+"/gone")
	if err := os.WriteFile(m+"/a/b/blk.bin", []byte("version one"), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(m + "/a/b/blk.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := os.WriteFile(m+"/a/b/blk.bin_77.tmp", []byte("the second version, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(m+"/a/b/blk.bin_77.tmp", m+"/a/b/blk.bin"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(m + "/a/b/blk.bin"); err != nil || string(got) != "the second version, longer" {
		t.Errorf("after the rename over: %q %v", got, err)
	}
	buf := make([]byte, 64)
	if n, _ := old.ReadAt(buf, 0); string(buf[:n]) != "version one" {
		t.Errorf("a reader of the first version read %q", buf[:n])
	}
	kept, err := os.Open(m + "/a/b/blk.bin")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m + "/a/b/blk.bin"); err != nil {
		t.Fatal(err)
	}
	if n, _ := kept.ReadAt(buf, 0); string(buf[:n]) != "the second version, longer" {
		t.Errorf("a reader of an unlinked file read %q", buf[:n])
	}
	kept.Close()
	if _, err := os.Stat(m + "/a/b/blk.bin"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unlinked file: %v", err)
	}
	lock, err := os.OpenFile(m+"/.lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("flock of a lock file: %v", err)
	}
	lock.Close()
	logf, err := os.OpenFile(m+"/a/ucm.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		fmt.Fprintf(logf, "line %d\n", i)
	}
	logf.Close()
	if err := os.WriteFile(m+"/config.json", []byte(`{"model": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A published file renamed (mv, or LMCache writing in a tmp directory
	// and renaming into its base): moved, its bytes and mtime kept.
	sh(t, "mkdir", m+"/tmpdir")
	if err := os.WriteFile(m+"/tmpdir/page.data", []byte("moved bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(m + "/tmpdir/page.data")
	if err := os.Rename(m+"/tmpdir/page.data", m+"/a/page.data"); err != nil {
		t.Fatalf("rename of a published file: %v", err)
	}
	if got, err := os.ReadFile(m + "/a/page.data"); err != nil || string(got) != "moved bytes" {
		t.Errorf("a moved file: %q %v", got, err)
	}
	if after, err := os.Stat(m + "/a/page.data"); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("a moved file's mtime: %v, want %v (%v)", after.ModTime(), before.ModTime(), err)
	}
	if _, err := os.Stat(m + "/tmpdir/page.data"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old name of a moved file: %v", err)
	}
	// A directory renamed: moved with what it holds.
	sh(t, "mkdir", m+"/tmpdir/sub")
	if err := os.WriteFile(m+"/tmpdir/sub/kv.bin", []byte("in a moved directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(m+"/tmpdir", m+"/moved"); err != nil {
		t.Errorf("rename of a directory: %v", err)
	}
	if got, err := os.ReadFile(m + "/moved/sub/kv.bin"); err != nil || string(got) != "in a moved directory" {
		t.Errorf("a file of a moved directory: %q %v", got, err)
	}
	if _, err := os.Stat(m + "/tmpdir"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old name of a moved directory: %v", err)
	}
	if err := unix.Rmdir(m + "/a"); !errors.Is(err, unix.ENOTEMPTY) {
		t.Errorf("rmdir of a directory with files: %v, want ENOTEMPTY", err)
	}
	want := engineTree(t, m)
	if len(want) != 5 || string(want["a/ucm.log"]) != "line 0\nline 1\nline 2\n" {
		t.Fatalf("the tree: %q", want)
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	d = mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
	sameTree(t, "after a restart", engineTree(t, m), want)
	for _, p := range []string{"empty", "a/b/c", "moved/sub"} {
		if fi, err := os.Stat(filepath.Join(m, p)); err != nil || !fi.IsDir() {
			t.Errorf("directory %s after a restart: %v", p, err)
		}
	}
	if b, err := getxattr(m, "user.ucm.layout"); err != nil || b != "files" {
		t.Errorf("layout after a restart: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(m, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a removed directory after a restart: %v", err)
	}
}

// TestFilesCorruptCopy: a file of a files model whose tier copy changed
// on disk (same size, other bytes) is a miss at its first read after a
// restart, never the wrong bytes, also when it was moved first, and leaves the model; a file next to
// it is served.
func TestFilesCorruptCopy(t *testing.T) {
	dir := testDir(t)
	mnt, tier := filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	d := mountUCM(t, mountOpts{Mnt: mnt, Tier: tier, Args: []string{"--default-layout", "files"}})
	sh(t, "mkdir", "-p", d.path("eng", "pages"))
	good, bad := engineData("corrupt", 1), engineData("corrupt", 2)
	for name, b := range map[string][]byte{"good.bin": good, "bad.bin": bad, "bad2.bin": bad} {
		if err := os.WriteFile(d.path("eng", "pages", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := ctl(t, d.Mnt, "flush", "model eng"); got != "ok flushed\n" {
		t.Fatalf("flush: %q", got)
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	for _, name := range []string{"bad.bin", "bad2.bin"} {
		f, err := os.OpenFile(filepath.Join(tier, "eng", "pages", name), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("rot"), 1000); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	d = mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
	// Moved before its first read (a link of its tier file under the new
	// name): still checked at that read.
	sh(t, "mv", d.path("eng", "pages", "bad2.bin"), d.path("eng", "moved.bin"))
	if got, err := os.ReadFile(d.path("eng", "moved.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a corrupt copy moved before its first read read %d bytes (equal to the file %v), err %v; want ENOENT", len(got), bytes.Equal(got, bad), err)
	}
	if got, err := os.ReadFile(d.path("eng", "pages", "bad.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a corrupt copy read %d bytes (equal to the file %v), err %v; want ENOENT", len(got), bytes.Equal(got, bad), err)
	}
	if _, err := os.Stat(d.path("eng", "pages", "bad.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a corrupt file after its read: %v, want gone", err)
	}
	if got, err := os.ReadFile(d.path("eng", "pages", "good.bin")); err != nil || !bytes.Equal(got, good) {
		t.Errorf("the file beside it: %v (equal %v)", err, bytes.Equal(got, good))
	}
}

// TestFilesFlatAdopt: a flat directory of 10^5 pages an engine filled on
// a plain disk becomes a files model by the tree mark alone: the mount
// adopts every page at start, lists the directory whole, reads pages and
// answers lookups by path.
func TestFilesFlatAdopt(t *testing.T) {
	const n = 100_000
	dir := testDir(t)
	mnt, tier := filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	model := filepath.Join(tier, "sglang")
	if err := os.MkdirAll(model, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	page := func(i int) string { return fmt.Sprintf("%064x_m_0_1.bin", i) }
	for i := range n {
		if err := os.WriteFile(filepath.Join(model, page(i)), []byte(strconv.Itoa(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(model, ".ucmfs-tree"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
	if b, err := getxattr(d.path("sglang"), "user.ucm.layout"); err != nil || b != "files" {
		t.Fatalf("layout of an adopted tree: %q %v", b, err)
	}
	names, err := os.ReadDir(d.path("sglang"))
	if err != nil || len(names) != n {
		t.Fatalf("the flat directory lists %d names (%v), want %d", len(names), err, n)
	}
	for _, i := range []int{0, 4242, n - 1} {
		if got, err := os.ReadFile(d.path("sglang", page(i))); err != nil || string(got) != strconv.Itoa(i) {
			t.Errorf("page %d: %q %v", i, got, err)
		}
	}
	req := "exists sglang " + page(7) + " " + page(n-2) + " " + page(n)
	if got := ctl(t, d.Mnt, "lookup", req); got != "ok 2 110\n" {
		t.Errorf(".ucm/lookup of adopted pages: %q", got)
	}
}

// TestFilesDirMoveKill9: `mv` of a directory of durable files (each
// written, fsynced and renamed into place) moves it in place, while a
// separate process whose working directory is beneath it goes on
// listing and reading there; then a directory and a file go on to
// another files model. After a kill -9 of the daemon and a remount the
// files are under the new paths, byte for byte, none under the old, and
// the tier passes fsck.
func TestFilesDirMoveKill9(t *testing.T) {
	d, mnt, tier := filesMount(t)
	m := d.path("eng")
	sh(t, "mkdir", "-p", m+"/run1/layer0", m+"/run1/layer1")
	for i := range 20 {
		p := fmt.Sprintf("%s/run1/layer%d/%064x.bin", m, i%2, i)
		fd, err := unix.Open(p+"_1.tmp", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Write(fd, engineData("dirmove", i)); err != nil {
			t.Fatal(err)
		}
		if err := unix.Fsync(fd); err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		if err := os.Rename(p+"_1.tmp", p); err != nil {
			t.Fatal(err)
		}
	}
	want := engineTree(t, m+"/run1")
	// A process with its working directory in run1/layer1 sees the move
	// as on a local disk: its getcwd follows, its relative names work.
	cwd := exec.Command("python3", "-c", `
import os, sys
os.chdir(sys.argv[1])
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
names = sorted(os.listdir("."))
with open(names[0], "rb") as f:
    n = len(f.read())
print(os.getcwd(), len(names), n)
`, m+"/run1/layer1")
	stdin, _ := cwd.StdinPipe()
	stdout, _ := cwd.StdoutPipe()
	if err := cwd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make([]byte, 6)
	if _, err := io.ReadFull(stdout, ready); err != nil {
		t.Fatal(err)
	}
	sh(t, "mv", m+"/run1", m+"/run2")
	stdin.Write([]byte("go\n"))
	out, _ := io.ReadAll(stdout)
	if err := cwd.Wait(); err != nil {
		t.Errorf("the process working in the moved directory: %v", err)
	}
	if got, exp := strings.TrimSpace(string(out)), fmt.Sprintf("%s/run2/layer1 10 %d", m, len(engineData("dirmove", 0))); got != exp {
		t.Errorf("the process working in the moved directory printed %q, want %q", got, exp)
	}
	sameTree(t, "after mv", engineTree(t, m+"/run2"), want)
	// And to another files model, a directory and a file.
	sh(t, "mkdir", "-p", d.path("other"))
	sh(t, "mv", m+"/run2/layer0", d.path("other", "layer0"))
	sh(t, "mv", m+"/run2/layer1/"+fmt.Sprintf("%064x.bin", 1), d.path("other"))
	d.kill()
	d.detach()
	d = mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
	got := engineTree(t, d.path("eng", "run2"))
	for rel, b := range engineTree(t, d.path("other")) {
		if rel == fmt.Sprintf("%064x.bin", 1) {
			rel = "layer1/" + rel
		}
		got[rel] = b
	}
	sameTree(t, "after kill -9 and a remount", got, want)
	for _, p := range []string{d.path("eng", "run1"), d.path("eng", "run2", "layer0")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("an old name after kill -9 and a remount: %v", err)
		}
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	if out, err := exec.Command(ucmfsBin, "fsck", tier).CombinedOutput(); err != nil {
		t.Errorf("ucmfs fsck of the tier: %v\n%s", err, out)
	}
}

// filesMount mounts the daemon, with the files layout for new models, on
// a new mount point over a new tier of the test's directory.
func filesMount(t *testing.T) (d *daemon, mnt, tier string) {
	dir := testDir(t)
	mnt, tier = filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	return mountUCM(t, mountOpts{Mnt: mnt, Tier: tier, Args: []string{"--default-layout", "files"}}), mnt, tier
}
