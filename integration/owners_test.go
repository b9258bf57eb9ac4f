package integration

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOwnersSecondUser replays, as a second local user against a root
// daemon with --allow-other, what that user could do to others' data, and
// checks every rule of model ownership (fs/owner.go), across a restart.
func TestOwnersSecondUser(t *testing.T) {
	u := newLocalUser(t)
	dir, opts := sharedMountOpts(t)
	d := mountUCM(t, opts)

	var rootSt syscall.Stat_t
	if err := syscall.Stat(d.Mnt, &rootSt); err != nil || rootSt.Mode&0o7777 != 0o1777 {
		t.Errorf("the root of an allow_other mount: %v, mode %o, want 1777", err, rootSt.Mode&0o7777)
	}
	// Root's models: one open to read (0755), one private (0700).
	ids := testIDs("owners", 4)
	for _, m := range []string{"rootm", "private"} {
		if err := os.Mkdir(d.path(m), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Mkdir(d.path(m, ids[0][:2]), 0o755)
		if err := writeVerdict(blockPath(d.Mnt, m, ids[0]), goodBlock(ids[0])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(d.path("private"), 0o700); err != nil {
		t.Fatalf("chmod by root: %v", err)
	}
	// A block file the user can copy in.
	src := filepath.Join(dir, "block")
	os.WriteFile(src, goodBlock(ids[1]), 0o644)

	refused := func(what, script string) {
		t.Helper()
		if out, err := u.run(script); err == nil {
			t.Errorf("%s: allowed to %s\n%s", what, u.Name, out)
		}
	}
	refused("rm -rf of root's model", "rm -rf "+d.path("rootm"))
	refused("setfattr quota on root's model", "setfattr -n user.ucm.quota -v 1 "+d.path("rootm"))
	refused("setfattr repr_kind on root's model", "setfattr -n user.ucm.repr_kind -v max "+d.path("rootm"))
	refused("a block created in root's model", "cp "+src+" "+blockPath(d.Mnt, "rootm", ids[1]))
	refused("chmod of root's model", "chmod 777 "+d.path("rootm"))
	refused("chown of root's model", "chown "+u.Name+" "+d.path("rootm"))
	refused("reading a block of a 0700 model", "cat "+blockPath(d.Mnt, "private", ids[0])+" >/dev/null")
	if _, err := os.Stat(blockPath(d.Mnt, "rootm", ids[0])); err != nil {
		t.Errorf("root's block after the attempts: %v", err)
	}
	if q, _ := getxattr(d.path("rootm"), "user.ucm.quota"); q != "0" && q != "" {
		t.Errorf("root's quota is %q", q)
	}
	u.must(t, "cat "+blockPath(d.Mnt, "rootm", ids[0])+" >/dev/null") // 0755: readable

	// The user's own model: its owner, mkdir's mode with the umask.
	own := d.path("userm")
	u.must(t, "umask 027 && mkdir "+own+" && mkdir -p "+own+"/"+ids[1][:2]+" && cp "+src+" "+blockPath(d.Mnt, "userm", ids[1]))
	checkOwner := func(when string, mode uint32) {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(own, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != u.Uid || st.Gid != u.Gid || st.Mode&0o7777 != mode {
			t.Errorf("%s: model owned by %d:%d mode %o, want %d:%d %o", when, st.Uid, st.Gid, st.Mode&0o7777, u.Uid, u.Gid, mode)
		}
		if err := syscall.Stat(blockPath(d.Mnt, "userm", ids[1]), &st); err != nil || st.Uid != u.Uid {
			t.Errorf("%s: its block: %v, uid %d", when, err, st.Uid)
		}
	}
	checkOwner("after mkdir", 0o750)
	u.must(t, "setfattr -n user.ucm.quota -v 1073741824 "+own+" && chmod 0700 "+own)
	checkOwner("after chmod", 0o700)
	refused("root's data read through another's model", "cat "+blockPath(d.Mnt, "private", ids[0]))

	// Kept across a restart.
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	d = mountUCM(t, opts)
	checkOwner("after a restart", 0o700)
	refused("setfattr quota on root's model after a restart", "setfattr -n user.ucm.quota -v 1 "+d.path("rootm"))
	if out := u.must(t, "setfattr -n user.ucm.quota -v 1073741824 "+own+" && getfattr --only-values -n user.ucm.quota "+own+" 2>/dev/null"); !strings.HasPrefix(out, "1073741824") {
		t.Errorf("the owner's quota: %q", out)
	}
	// A quota is the admin's: the owner may lower it, not raise or clear
	// it; root may.
	u.must(t, "setfattr -n user.ucm.quota -v 1000000 "+own)
	refused("the owner raising its quota", "setfattr -n user.ucm.quota -v 2000000 "+own)
	refused("the owner clearing its quota", "setfattr -n user.ucm.quota -v 0 "+own)
	if err := syscall.Setxattr(own, "user.ucm.quota", []byte("0"), 0); err != nil {
		t.Errorf("root clearing the user's quota: %v", err)
	}
	// Root may change anyone's model; the user may remove its own.
	if err := os.Chmod(own, 0o755); err != nil {
		t.Errorf("chmod by root: %v", err)
	}
	u.must(t, "rm -rf "+own)
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("the user's model after its rm -rf: %v", err)
	}
}

// TestModelChmodApplies: a chmod 700 of a model by its owner takes at
// once for another user whose shell is already inside it (its shard
// directory looked up, a block read), not after the kernel's entry TTL.
func TestModelChmodApplies(t *testing.T) {
	u := newLocalUser(t)
	_, opts := sharedMountOpts(t)
	d := mountUCM(t, opts)
	id := testIDs("chmod-applies", 1)[0]
	if err := os.Mkdir(d.path("m"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(d.path("m", id[:2]), 0o755)
	if err := writeVerdict(blockPath(d.Mnt, "m", id), goodBlock(id)); err != nil {
		t.Fatal(err)
	}
	script := "cd " + d.path("m", id[:2]) + " && cat " + id + ".bin >/dev/null && echo first && read x && " +
		"if cat " + id + ".bin >/dev/null 2>&1; then echo readable; else echo refused; fi"
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/", "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.Uid, Gid: u.Gid, Groups: []uint32{u.Gid}}}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "first" {
		t.Fatalf("the user's first read: %q", lines.Text())
	}
	if err := os.Chmod(d.path("m"), 0o700); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "go\n")
	in.Close()
	if !lines.Scan() || lines.Text() != "refused" {
		t.Errorf("a read inside a model just made 0700: %q, want refused", lines.Text())
	}
	cmd.Wait()
}

// TestFilesRewriteSecondUser: a user rewrites the files of its own files
// model in place, as on a local disk (`>`, `>>`: the published File is
// mode 0644 under a 0755 model, a new version at each open for writing),
// and cannot open root's for writing (0644, root's).
func TestFilesRewriteSecondUser(t *testing.T) {
	u := newLocalUser(t)
	_, opts := sharedMountOpts(t)
	d := mountUCM(t, opts)
	rootFiles := d.path("rootfiles")
	if err := os.Mkdir(rootFiles, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setxattr(rootFiles, "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootFiles, "conf.txt"), []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := d.path("userfiles")
	conf := filepath.Join(own, "conf.txt")
	u.must(t, "mkdir "+own+" && setfattr -n user.ucm.layout -v files "+own+
		" && echo a > "+conf+" && echo b > "+conf+" && echo c >> "+conf)
	if got, err := os.ReadFile(conf); err != nil || string(got) != "b\nc\n" {
		t.Errorf("the user's file after > and >>: %q, %v", got, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(conf, &st); err != nil || st.Mode&0o7777 != 0o644 || st.Uid != u.Uid {
		t.Errorf("the user's published file: %v, mode %o uid %d, want 644 and %d", err, st.Mode&0o7777, st.Uid, u.Uid)
	}
	if out, err := u.run("echo x >> " + filepath.Join(rootFiles, "conf.txt")); err == nil {
		t.Errorf("the user appended to root's file\n%s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(rootFiles, "conf.txt")); string(got) != "root's\n" {
		t.Errorf("root's file: %q", got)
	}
}
