package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestAdminQuotaKeptFromOwner: a quota root sets on a second user's model
// holds against that user: its rmdir of the emptied model is EPERM (a
// removal would drop the quota, and a mkdir of the name make the model
// anew without it), so a write past the quota still fails with EDQUOT,
// across a restart too. A quota the owner set itself, where there was
// none, is its own: its rmdir goes through; so does the owner's once
// root cleared the quota.
func TestAdminQuotaKeptFromOwner(t *testing.T) {
	requireTool(t, "python3")
	u := newLocalUser(t)
	dir, opts := sharedMountOpts(t)
	d := mountUCM(t, opts)
	ids := testIDs("admin-quota", 3)
	quota := len(goodBlock(ids[0])) * 3 / 2 // one block fits, two do not
	for i, id := range ids {
		os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), goodBlock(id), 0o644)
	}
	m := d.path("um")
	u.must(t, "mkdir "+m+" && mkdir -p "+filepath.Join(m, ids[0][:2]))
	if err := syscall.Setxattr(m, "user.ucm.quota", []byte(strconv.Itoa(quota)), 0); err != nil {
		t.Fatalf("root setting the quota: %v", err)
	}
	// cp writes block i as the user; beyond the quota it must fail.
	cp := func(i int) string {
		return "cp " + filepath.Join(dir, strconv.Itoa(i)) + " " + blockPath(d.Mnt, "um", ids[i])
	}
	holds := func(when string) {
		t.Helper()
		if q, err := getxattr(m, "user.ucm.quota"); err != nil || q != strconv.Itoa(quota) {
			t.Errorf("%s: the quota is %q, %v; want %d", when, q, err, quota)
		}
		// The owner empties its model and removes it, to make it anew.
		out, err := u.run("rm -rf " + m + "/* && rmdir " + m)
		if err == nil || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("%s: the owner's rmdir of its model with root's quota: %v, want EPERM\n%s", when, err, out)
		}
		u.run("mkdir " + m + "; mkdir -p " + filepath.Join(m, ids[0][:2]))
		if q, _ := getxattr(m, "user.ucm.quota"); q != strconv.Itoa(quota) {
			t.Errorf("%s: after the owner's rmdir and mkdir the quota is %q, want %d", when, q, quota)
		}
		u.must(t, cp(0))
		if out, err := u.run(cp(1)); err == nil || !strings.Contains(out, "Disk quota exceeded") {
			t.Errorf("%s: a write past root's quota: %v, want EDQUOT\n%s", when, err, out)
		}
	}
	holds("before a restart")
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	d = mountUCM(t, opts)
	holds("after a restart")

	// The owner's own quota is the owner's to drop with its model.
	own := d.path("own")
	setQuota := func(n int) string {
		return "python3 -c \"import os; os.setxattr('" + own + "', 'user.ucm.quota', b'" + strconv.Itoa(n) + "')\""
	}
	u.must(t, "mkdir "+own+" && "+setQuota(1000000)+" && "+setQuota(500000)+" && rmdir "+own)
	// Root's quota cleared, the owner removes its model.
	if err := syscall.Setxattr(m, "user.ucm.quota", []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	u.must(t, "rm -rf "+m)
}
