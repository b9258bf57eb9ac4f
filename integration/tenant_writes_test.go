package integration

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestTenantWriteShare: on an --allow-other mount with passthrough, a
// second local user's writes are served by the daemon, so the user's
// share of the pending budget (--max-pending-per-user 8MiB) stops a
// 32 MiB file at the write that passes it (EDQUOT), where passthrough
// would have let the kernel write it whole, and the file, torn, does not
// publish at dd's close; the user's file within its
// share publishes, a forked child cannot write the block its parent's
// close published, and root's writes keep passthrough. With
// --tenant-write-passthrough the user's writes are the kernel's again.
func TestTenantWriteShare(t *testing.T) {
	u := newLocalUser(t)
	_, o := sharedMountOpts(t, "--max-pending", "64MiB", "--max-pending-per-user", "8MiB", "--default-layout", "files")
	d := mountUCM(t, o)
	u.must(t, "mkdir "+d.path("ueng"))
	out, err := u.run("dd if=/dev/zero of=" + d.path("ueng", "big.bin") + " bs=1M count=32 2>&1")
	if err == nil || !strings.Contains(out, "quota") {
		t.Fatalf("32 MiB written by a user whose share is 8 MiB: %v\n%s", err, out)
	}
	// dd closes the file it could not finish: a torn file never publishes.
	if _, err := os.Stat(d.path("ueng", "big.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file whose write was refused, after its close: %v, want ENOENT", err)
	}
	u.must(t, "dd if=/dev/zero of="+d.path("ueng", "small.bin")+" bs=1M count=4 2>/dev/null")
	if fi, err := os.Stat(d.path("ueng", "small.bin")); err != nil || fi.Size() != 4<<20 {
		t.Fatalf("a file within the share: %v %v", fi, err)
	}
	// A child that inherited the descriptor cannot change the block its
	// parent's close published: its write is EPERM.
	requireTool(t, "python3")
	script := `import os, sys, time
p = sys.argv[1]
fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.write(fd, b"A" * 4096)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.read(r, 1)
    try:
        os.pwrite(fd, b"B" * 4096, 0)
        print("child wrote", flush=True)
    except OSError as e:
        print("child:", e.strerror, flush=True)
    os._exit(0)
os.close(fd)
os.write(w, b"x")
os.waitpid(pid, 0)
print("content:", open(p, "rb").read(4).decode())
`
	out = u.must(t, "python3 -c '"+script+"' "+d.path("ueng", "forked.bin"))
	if !strings.Contains(out, "child: Operation not permitted") || !strings.Contains(out, "content: AAAA") {
		t.Errorf("a write by a forked child after its parent's close published:\n%s", out)
	}

	// Root's writes keep passthrough: the kernel writes its 32 MiB file
	// whole (the daemon would have stopped it at root's share too).
	if err := os.WriteFile(d.path("ueng", "root.bin"), make([]byte, 32<<20), 0o644); err != nil {
		t.Fatalf("root's 32 MiB file: %v (passthrough expected)", err)
	}

	// The admin's choice: tenants' writes with passthrough too.
	d.stop()
	d = mountUCM(t, withArgs(o, "--tenant-write-passthrough"))
	u.must(t, "dd if=/dev/zero of="+d.path("ueng", "fast.bin")+" bs=1M count=32 2>&1")
	if fi, err := os.Stat(d.path("ueng", "fast.bin")); err != nil || fi.Size() != 32<<20 {
		t.Fatalf("--tenant-write-passthrough: the user's 32 MiB file: %v %v", fi, err)
	}
}

// withArgs is o with args added to its flags.
func withArgs(o mountOpts, args ...string) mountOpts {
	o.Args = append(append([]string{}, o.Args...), args...)
	return o
}
