package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFilesDirPin: user.ucm.pinned=1 on a directory of a files model
// keeps every file beneath it in memory, those there before and those
// published after, while a stream of other files twice the memory tier
// goes through; a pin whose files do not fit is ENOSPC and pins nothing;
// the pin outlives a restart (the files come back into memory); unpin
// lets them go; rmdir drops it.
func TestFilesDirPin(t *testing.T) {
	dir := testDir(t)
	mnt, tier := filepath.Join(dir, "mnt"), filepath.Join(dir, "tier")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--default-layout", "files", "--memory", "16MiB"}
	d := mountUCM(t, mountOpts{Mnt: mnt, Tier: tier, Args: args})
	m := d.path("eng")
	sh(t, "mkdir", "-p", m+"/hot/sub", m+"/cold", m+"/big", m+"/gone")
	const size = 1 << 20
	data := func(name string) []byte { return bytes.Repeat([]byte(name[:1]), size) }
	put := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(m, name), data(filepath.Base(name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	attr := func(path, name string) string {
		t.Helper()
		v, err := getxattr(path, "user.ucm."+name)
		if err != nil {
			t.Fatalf("getxattr %s %s: %v", path, name, err)
		}
		return v
	}
	hot := []string{"hot/a.bin", "hot/sub/b.bin"}
	for _, f := range hot {
		put(f)
	}
	if v := attr(m+"/hot", "pinned"); v != "0" {
		t.Fatalf("a new directory's pinned: %q", v)
	}
	if err := unix.Setxattr(m+"/hot", "user.ucm.pinned", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	put("hot/sub/c.bin") // published after the pin
	hot = append(hot, "hot/sub/c.bin")
	for i := range 32 { // twice the memory tier
		put(fmt.Sprintf("cold/x%02d.bin", i))
	}
	for _, f := range hot {
		if v := attr(filepath.Join(m, f), "pinned"); v != "1" {
			t.Errorf("%s beneath a pinned directory: pinned %q", f, v)
		}
		if v := attr(filepath.Join(m, f), "tiers"); !strings.Contains(v, "mem") {
			t.Errorf("%s beneath a pinned directory is not in memory after 32 MiB of other files: tiers %q", f, v)
		}
	}
	if v := attr(m+"/cold/x00.bin", "tiers"); strings.Contains(v, "mem") {
		t.Errorf("the first of 32 MiB through a 16 MiB memory tier is still in memory: %q", v)
	}

	// More than memory can hold: refused, and nothing pinned by it.
	for i := range 20 {
		put(fmt.Sprintf("big/y%02d.bin", i))
	}
	if err := unix.Setxattr(m+"/big", "user.ucm.pinned", []byte("1"), 0); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("pin of 20 MiB in a 16 MiB memory tier: %v, want ENOSPC", err)
	}
	if v := attr(m+"/big", "pinned"); v != "0" {
		t.Errorf("a refused pin reads %q", v)
	}
	for i := range 20 {
		if v := attr(filepath.Join(m, fmt.Sprintf("big/y%02d.bin", i)), "pinned"); v != "0" {
			t.Errorf("big/y%02d.bin is left pinned by a refused directory pin", i)
		}
	}
	if err := unix.Setxattr(m+"/hot", "user.ucm.pinned", []byte("yes"), 0); !errors.Is(err, unix.EINVAL) {
		t.Errorf("pinned=yes: %v, want EINVAL", err)
	}
	if err := unix.Setxattr(m+"/gone", "user.ucm.pinned", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	sh(t, "rmdir", m+"/gone")
	sh(t, "mkdir", m+"/gone")
	if v := attr(m+"/gone", "pinned"); v != "0" {
		t.Errorf("a directory made again where a pinned one was removed: pinned %q", v)
	}

	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	d = mountUCM(t, mountOpts{Mnt: mnt, Tier: tier, Args: args})
	if v := attr(m+"/hot", "pinned"); v != "1" {
		t.Errorf("after a restart, the directory's pinned: %q", v)
	}
	for _, f := range hot {
		path := filepath.Join(m, f)
		waitUntil(t, f+" back in memory, pinned", func() bool {
			return attr(path, "pinned") == "1" && strings.Contains(attr(path, "tiers"), "mem")
		})
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data(filepath.Base(f))) {
			t.Errorf("%s after a restart: %v", f, err)
		}
	}

	if err := unix.Setxattr(m+"/hot", "user.ucm.pinned", []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	for _, f := range hot {
		if v := attr(filepath.Join(m, f), "pinned"); v != "0" {
			t.Errorf("%s after its directory's unpin: pinned %q", f, v)
		}
	}
	// The model's root pins the whole model.
	if err := unix.Setxattr(m, "user.ucm.pinned", []byte("1"), 0); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("pin of the whole model (over 16 MiB): %v, want ENOSPC", err)
	}
	sh(t, "rm", "-r", m+"/big", m+"/cold")
	if err := unix.Setxattr(m, "user.ucm.pinned", []byte("1"), 0); err != nil {
		t.Errorf("pin of the model's root: %v", err)
	}
	if v := attr(m+"/hot/a.bin", "pinned"); v != "1" {
		t.Errorf("a file beneath a pinned root: pinned %q", v)
	}
}
