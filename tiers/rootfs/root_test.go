package rootfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// setup makes a root with a file and a directory, and an outside
// directory that links in the root point at.
func setup(t *testing.T) (r *Root, root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root + "/m/d", outside + "/sub"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside+"/secret.txt", []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root+"/m/d/f", []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(outside+"/secret.txt", "user.x", []byte("out"), 0); err != nil {
		t.Skipf("no user xattrs on the test directory: %v", err)
	}
	if err := unix.Setxattr(root+"/m/d/f", "user.x", []byte("in"), 0); err != nil {
		t.Fatal(err)
	}
	// The planted links: a directory link and a file link.
	if err := os.Symlink(outside, root+"/m/x"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside+"/secret.txt", root+"/m/d/lnk"); err != nil {
		t.Fatal(err)
	}
	r, err := Open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, root, outside
}

// TestNoOperationFollowsALink: every operation through a planted link
// fails with ELOOP, is counted, and nothing outside the root changes.
func TestNoOperationFollowsALink(t *testing.T) {
	r, _, outside := setup(t)
	var met []string
	r.OnLink = func(rel string) { met = append(met, rel) }
	var st unix.Stat_t
	var buf [16]byte
	ops := map[string]func() error{
		"create": func() error {
			f, err := r.OpenFile("m/x/evil.txt", unix.O_WRONLY|unix.O_CREAT, 0o644)
			closeIf(f)
			return err
		},
		"overwrite": func() error {
			f, err := r.OpenFile("m/x/secret.txt", unix.O_WRONLY|unix.O_TRUNC, 0)
			closeIf(f)
			return err
		},
		"open link":   func() error { f, err := r.OpenRegular("m/d/lnk"); closeIf(f); return err },
		"mkdir":       func() error { return r.Mkdir("m/x/made", 0o755) },
		"mkdirall":    func() error { return r.MkdirAll("m/x/made/deeper", 0o755) },
		"unlink":      func() error { return r.Unlink("m/x/secret.txt") },
		"rmdir":       func() error { return r.Rmdir("m/x/sub") },
		"rename from": func() error { return r.Rename("m/x/secret.txt", "m/d/stolen", 0) },
		"rename to":   func() error { return r.Rename("m/d/f", "m/x/secret.txt", 0) },
		"link":        func() error { return r.Link("m/d/f", "m/x/linked") },
		"stat":        func() error { return r.Lstat("m/x/secret.txt", &st) },
		"stat link":   func() error { return r.Stat("m/d/lnk", &st) },
		"utimes":      func() error { return r.Chtimes("m/x/secret.txt", time.Unix(1, 0), time.Unix(1, 0)) },
		"getxattr":    func() error { _, err := r.Getxattr("m/d/lnk", "user.x", buf[:]); return err },
		"getxattr2":   func() error { _, err := r.Getxattr("m/x/secret.txt", "user.x", buf[:]); return err },
		"readdir":     func() error { _, err := r.ReadDir("m/x"); return err },
		"removeall":   func() error { return r.RemoveAll("m/x/sub") },
		"syncdir":     func() error { return r.SyncDir("m/x") },
		"readfile":    func() error { _, err := r.ReadFile("m/x/secret.txt"); return err },
		"createtemp":  func() error { f, _, err := r.CreateTemp("m/x", ".tmp-", 0o600); closeIf(f); return err },
	}
	for name, op := range ops {
		met = met[:0]
		if err := op(); !errors.Is(err, unix.ELOOP) {
			t.Errorf("%s: %v, want ELOOP", name, err)
		}
		if len(met) == 0 {
			t.Errorf("%s: the link was not reported", name)
		}
	}
	ents, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"secret.txt", "sub"}) {
		t.Errorf("outside the root now holds %v", names)
	}
	if b, _ := os.ReadFile(outside + "/secret.txt"); string(b) != "secret" {
		t.Errorf("outside file now %q", b)
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// TestLinksNeverListed: ReadDir leaves links out; RemoveAll of a
// directory holding a link removes the link, not what it points at.
func TestLinksNeverListed(t *testing.T) {
	r, root, outside := setup(t)
	ents, err := r.ReadDir("m/d")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "f" || ents[0].IsDir() {
		t.Fatalf("listing: %v", ents)
	}
	if r.Links() != 1 {
		t.Errorf("links counted %d, want 1", r.Links())
	}
	if err := r.RemoveAll("m"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(root + "/m"); !os.IsNotExist(err) {
		t.Errorf("m still there: %v", err)
	}
	if _, err := os.Stat(outside + "/secret.txt"); err != nil {
		t.Errorf("outside file gone: %v", err)
	}
	if _, err := os.Stat(outside + "/sub"); err != nil {
		t.Errorf("outside dir gone: %v", err)
	}
}

// TestOperationsBeneath: the operations work on plain paths.
func TestOperationsBeneath(t *testing.T) {
	r, root, _ := setup(t)
	var buf [16]byte
	n, err := r.Getxattr("m/d/f", "user.x", buf[:])
	if err != nil || string(buf[:n]) != "in" {
		t.Fatalf("getxattr: %q %v", buf[:n], err)
	}
	if err := r.MkdirAll("m/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	f, rel, err := r.CreateTemp("m/a/b", ".tmp-", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("hello")
	f.Close()
	if err := r.Rename(rel, "m/a/b/c/g", unix.RENAME_NOREPLACE); err != nil {
		t.Fatal(err)
	}
	if err := r.Link("m/a/b/c/g", "m/a/h"); err != nil {
		t.Fatal(err)
	}
	if b, err := r.ReadFile("m/a/h"); err != nil || string(b) != "hello" {
		t.Fatalf("read: %q %v", b, err)
	}
	when := time.Unix(1000, 0)
	if err := r.Chtimes("m/a/h", when, when); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(root + "/m/a/h"); !fi.ModTime().Equal(when) {
		t.Errorf("mtime %v", fi.ModTime())
	}
	if err := r.SyncDir("m/a"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "/etc", "../x", "m/../x", "m//x", "m/./x", "m/"} {
		if err := r.Mkdir(bad, 0o755); !errors.Is(err, unix.EXDEV) && !errors.Is(err, unix.EINVAL) {
			t.Errorf("mkdir %q: %v, want EXDEV", bad, err)
		}
	}
	if err := r.Unlink("m/a/h"); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveAll("m/a"); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveAll("m/a"); err != nil {
		t.Fatalf("remove of a missing path: %v", err)
	}
	var st unix.Statfs_t
	if err := r.Statfs(&st); err != nil || st.Bsize == 0 {
		t.Fatalf("statfs: %v", err)
	}
}

// TestReopenTakesNoLink: a tier's directory moved away and a link put at
// its path (by whoever may write the path's parent) is seen as gone, and
// Reopen refuses the link; a directory of another owner made at the path
// is refused too; a directory of the tier's owner made again is taken.
func TestReopenTakesNoLink(t *testing.T) {
	base := t.TempDir()
	dir, elsewhere := filepath.Join(base, "tier"), filepath.Join(base, "elsewhere")
	for _, d := range []string{dir, elsewhere} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if gone, _, err := r.Gone(); gone || err != nil {
		t.Fatalf("gone at once: %v %v", gone, err)
	}
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	if gone, why, _ := r.Gone(); !gone || !strings.Contains(why, "link") {
		t.Errorf("a link at the path: gone %v (%s)", gone, why)
	}
	if r.PathIsDir() {
		t.Error("a link at the path taken for a directory")
	}
	if err := r.Reopen(); err == nil {
		t.Fatal("Reopen took the link")
	}
	if err := r.Mkdir("x", 0o755); err != nil { // still the moved directory
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "x")); err == nil {
		t.Fatal("a mkdir went through the link")
	}
	os.Remove(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Skipf("chown: %v", err)
	}
	if err := r.Reopen(); !errors.Is(err, unix.EPERM) {
		t.Fatalf("Reopen of another owner's directory: %v, want EPERM", err)
	}
	os.Chown(dir, os.Getuid(), os.Getgid())
	if err := r.Reopen(); err != nil {
		t.Fatalf("Reopen of the tier owner's directory: %v", err)
	}
	if err := r.Mkdir("y", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "y")); err != nil {
		t.Fatalf("not the directory at the path: %v", err)
	}
}

// TestOpenDirectoryWithAPerm: O_DIRECTORY with a perm (which only a
// create uses) opens a directory, and says ENOTDIR of a file. It was
// EINVAL: O_DIRECTORY is a bit of O_TMPFILE, and openat2 was given the
// mode, which it refuses without O_CREAT or O_TMPFILE.
func TestOpenDirectoryWithAPerm(t *testing.T) {
	r, _, _ := setup(t)
	fd, err := r.OpenFD("m/d", unix.O_RDONLY|unix.O_DIRECTORY, 0o755)
	if err != nil {
		t.Fatalf("open of a directory: %v", err)
	}
	unix.Close(fd)
	if _, err := r.OpenFD("m/d/f", unix.O_RDONLY|unix.O_DIRECTORY, 0o755); !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("open of a file as a directory: %v, want ENOTDIR", err)
	}
	fd, err = r.OpenFD("m/d", unix.O_TMPFILE|unix.O_RDWR, 0o600)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return
	}
	if err != nil {
		t.Fatalf("O_TMPFILE: %v", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&0o777 != 0o600 {
		t.Fatalf("O_TMPFILE file: mode %o %v, want 600", st.Mode&0o777, err)
	}
}
