package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestControlSessionIsOpeners: a control session is its opener's. A
// member of the control group opens .ucm/gpu, .ucm/lookup or .ucm/events
// and hands the descriptor to a setuid-root program: su, as its stderr
// (its error message carries the member's request lines), or a program
// that reads its stdin and prints it. The program's writes and reads are
// refused (EACCES); no request runs as root, nothing of root's is read or
// written, and the member's own session goes on working.
func TestControlSessionIsOpeners(t *testing.T) {
	requireTool(t, "su")
	u := newLocalUser(t)
	dir, opts := sharedMountOpts(t, "--gpu", "sim", "--control-group", u.Name)
	d := mountUCM(t, opts)
	echo := setuidEcho(t, dir)

	// Root's: a 0600 file, and a 0700 model with one block.
	rootFile := filepath.Join(dir, "rootfile")
	if err := os.WriteFile(rootFile, []byte("ROOTFILE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := testIDs("opener", 1)
	if err := os.Mkdir(d.path("sec2"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(d.path("sec2", ids[0][:2]), 0o755)
	if err := writeVerdict(blockPath(d.Mnt, "sec2", ids[0]), goodBlock(ids[0])); err != nil {
		t.Fatal(err)
	}
	// The member's: a files model holding the payload.
	loot := d.path("loot")
	u.must(t, "mkdir "+loot+" && setfattr -n user.ucm.layout -v files "+loot+" && printf 'PWNED!!!\\n' >"+loot+"/payload.txt")

	exists := "exists sec2 " + ids[0]
	if got := u.must(t, `exec 3<>`+d.path(".ucm", "lookup")+`; echo "`+exists+`" >&3; cat <&3`); !strings.HasPrefix(got, "err EACCES") {
		t.Fatalf("%s as %s: %q, want err EACCES", exists, u.Name, got)
	}
	// su "x<newline>REQUEST<newline>y" 2>&3 writes "su: user x", REQUEST
	// and "y does not exist ..." into the session.
	viaSu := func(req string) string { return `su "$(printf 'x\n%s\ny' '` + req + `')" 2>&3;` }

	// The reviewer's steps on .ucm/gpu: a region of root's file, read
	// into the member's model and overwritten from it.
	gpu := u.must(t, `exec 3<>`+d.path(".ucm", "gpu")+`; `+viaSu("register sim "+rootFile+" 9")+
		` printf 'dump 1 loot stolen.txt:0:9\nload 1 loot payload.txt:0:file\n' >&3; cat <&3`)
	if b, _ := os.ReadFile(rootFile); string(b) != "ROOTFILE\n" {
		t.Errorf("root's 0600 file was overwritten: %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(loot, "stolen.txt")); err == nil {
		t.Errorf("root's 0600 file was read into the member's model: %q", b)
	}
	noneOK(t, "the gpu session su wrote into", gpu)

	// .ucm/lookup: su writes the request; the member reads the answers.
	look := u.must(t, `exec 3<>`+d.path(".ucm", "lookup")+`; `+viaSu(exists)+` cat <&3`)
	noneOK(t, "the lookup session su wrote into", look)

	// The same with a setuid-root program that reports its error: the
	// write is refused with EACCES.
	if got, _ := u.run(`exec 3<>` + d.path(".ucm", "lookup") + `; ` + echo + " '" + exists + "\n'; cat <&3"); got != "write: Permission denied\n" {
		t.Errorf("a setuid writer of the member's lookup session: %q, want write: Permission denied", got)
	}

	// A setuid-root reader of a session's answers: the member's
	// unterminated request would be answered when the session is read.
	if got, _ := u.run(`exec 3<>` + d.path(".ucm", "lookup") + `; printf '` + exists + `' >&3; ` + echo + ` <&3`); got != "read: Permission denied\n" {
		t.Errorf("a setuid reader of the member's lookup session: %q, want read: Permission denied", got)
	}

	// A setuid-root reader of .ucm/events would see root's 0700 model.
	if got, _ := u.run(`exec 3<>` + d.path(".ucm", "events") + `; echo 'from oldest' >&3; ` + echo + ` <&3`); got != "read: Permission denied\n" {
		t.Errorf("a setuid reader of the member's events stream: %q, want read: Permission denied", got)
	}

	// A session root opened, inherited by a process of the member (a
	// daemon that opens as root and then drops its privileges): the
	// member's process may not use it either.
	if got := asMemberWithRootSession(t, u, d.path(".ucm", "lookup"), exists); !strings.Contains(got, "Permission denied") || strings.Contains(got, "ok") {
		t.Errorf("root's lookup session used by the member's process: %q, want Permission denied", got)
	}

	// The member's own session still works, as the member, with nothing
	// of su's message in it.
	mine := d.path("mine")
	u.must(t, "mkdir "+mine)
	own := u.must(t, `exec 3<>`+d.path(".ucm", "lookup")+`; `+viaSu(exists)+` echo "exists mine `+ids[0]+`" >&3; cat <&3`)
	if strings.TrimSpace(own) != "ok 0 0" {
		t.Errorf("the member's session after su's refused write: %q, want ok 0 0", own)
	}
}

// asMemberWithRootSession opens file as root (this test) and runs a
// shell of u that inherits it as descriptor 3, writes req and reads the
// answers; it returns what the shell printed.
func asMemberWithRootSession(t *testing.T, u localUser, file, req string) string {
	t.Helper()
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := u.command(`echo "` + req + `" >&3; cat <&3`)
	cmd.ExtraFiles = []*os.File{f}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// noneOK fails the test when an answer in out is "ok": a request a setuid
// program wrote or read ran.
func noneOK(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ok") {
			t.Errorf("%s answered %q:\n%s", what, l, out)
		}
	}
}

// setuidEcho builds a setuid-root program in dir and returns its path
// (the test is skipped without a C compiler). Without arguments it reads
// its standard input once and writes what it read to its standard
// output; with one, it writes it to descriptor 3. A failure prints the
// call and its error ("read: Permission denied").
func setuidEcho(t *testing.T, dir string) string {
	t.Helper()
	cc := requireTool(t, "cc")
	src := filepath.Join(dir, "echo.c")
	prog := `#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
	char b[65536];
	ssize_t n;
	if (argc > 1) {
		if (write(3, argv[1], strlen(argv[1])) < 0) { perror("write"); return 1; }
		return 0;
	}
	n = read(0, b, sizeof b);
	if (n < 0) { perror("read"); return 1; }
	return write(1, b, n) != n;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "suid-echo")
	if out, err := exec.Command(cc, "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	if err := os.Chmod(bin, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
