package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegisterSimAsCaller: another user, allowed on the control files,
// registers sim regions against a root daemon. Paths are resolved and
// opened with the user's credentials: a file in a directory it cannot
// search is EACCES whether it exists or not (no existence leak), a device
// node is refused without being opened, a file it owns works.
func TestRegisterSimAsCaller(t *testing.T) {
	u := newLocalUser(t)
	dir, opts := sharedMountOpts(t, "--gpu", "sim", "--control-group", u.Name)
	d := mountUCM(t, opts)

	secret := filepath.Join(dir, "secret")
	os.Mkdir(secret, 0o700)
	if err := os.WriteFile(filepath.Join(secret, "exists"), make([]byte, 4096), 0o666); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join("/dev/shm", "ucmit-"+u.Name)
	u.must(t, "truncate -s 4096 "+own)
	t.Cleanup(func() { os.Remove(own) })

	ask := func(req string) string {
		out, err := u.run(`exec 3<>` + d.path(".ucm", "gpu") + `; printf '%s\n' "` + req + `" >&3; cat <&3`)
		if err != nil {
			t.Fatalf("as %s: %s: %v\n%s", u.Name, req, err, out)
		}
		return strings.TrimSpace(out)
	}
	for _, c := range []struct{ req, want string }{
		{"register sim " + filepath.Join(secret, "exists") + " 4096", "err EACCES"},
		{"register sim " + filepath.Join(secret, "missing") + " 4096", "err EACCES"},
		{"register sim /dev/null 0", "err EINVAL"},
		{"register sim /dev/shm 0", "err EISDIR"},
		{"register sim " + own + "-missing 4096", "err ENOENT"},
		{"register sim " + own + " 4096", "ok region="},
	} {
		if got := ask(c.req); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %s...", c.req, got, c.want)
		}
	}
}
