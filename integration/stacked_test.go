package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStackedOnFilesModel: a daemon whose tier is a files model of
// another ucmfs mount (a directory like any other to it, as a 3FS or NFS
// client's FUSE mount is), as a shared (nfs) or a private (nvme) tier,
// keeps its model settings there, writes back, flushes, and after a kill
// -9 starts again on it and finds every flushed file, byte for byte,
// under its directories. Each step failed once: the settings'
// directory fsync (EOPNOTSUPP from every ucmfs directory), the tree mark
// opened for writing once published (EACCES), an fsync through the node
// the kernel had moved with a published file's rename (ENOENT), the
// listing after the restart, which took the lower mount's link count of
// 2 for "no subdirectory" and showed none, and the private tier's lock
// file, opened for writing at the restart (EACCES).
func TestStackedOnFilesModel(t *testing.T) {
	lower := mountUCM(t, mountOpts{})
	for _, kind := range []string{"nfs", "nvme"} {
		t.Run(kind, func(t *testing.T) { stackedOn(t, lower, kind) })
	}
	if out := lower.out.String(); strings.Contains(out, "refused") {
		t.Errorf("the lower mount logged a refusal:\n%s", out)
	}
}

// stackedOn runs TestStackedOnFilesModel with a tier of kind on a new
// files model of lower.
func stackedOn(t *testing.T, lower *daemon, kind string) {
	share := lower.path(kind)
	if err := os.Mkdir(share, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(share, "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatal(err)
	}
	dir := testDir(t)
	mnt := filepath.Join(dir, "upper")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	upperOpts := mountOpts{Mnt: mnt, Bare: true, Args: []string{"--memory", "64MiB", "--memory-dir", memDir,
		"--log-level", "warn", "--tier", kind + ":" + share}}
	upper := mountUCM(t, upperOpts)
	model := upper.path("pages")
	if err := os.Mkdir(model, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(model, "user.ucm.layout", []byte("files"), 0); err != nil {
		t.Fatalf("layout of a model on the stacked tier: %v", err)
	}
	const dirs, per = 8, 3
	page := func(d, i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("page %d/%d;", d, i)), 4096)
	}
	for d := range dirs {
		sub := filepath.Join(model, fmt.Sprintf("d%d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range per {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("p%d", i)), page(d, i), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// A flush after each directory: write-backs race with the
		// kernel's entries of the lower mount's renames.
		if got := ctl(t, upper.Mnt, "flush", "all"); got != "ok flushed\n" {
			t.Fatalf("flush after d%d: %q", d, got)
		}
	}
	upper.kill()
	upper.detach()
	upper = mountUCM(t, upperOpts)
	ents, err := os.ReadDir(upper.path("pages"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != dirs {
		t.Errorf("after kill -9: %d entries in the model, want its %d directories", len(ents), dirs)
	}
	for d := range dirs {
		for i := range per {
			got, err := os.ReadFile(upper.path("pages", fmt.Sprintf("d%d", d), fmt.Sprintf("p%d", i)))
			if err != nil || !bytes.Equal(got, page(d, i)) {
				t.Errorf("after kill -9: d%d/p%d: %d bytes, err %v", d, i, len(got), err)
			}
		}
	}
	if out := upper.out.String(); strings.Contains(out, "refused") {
		t.Errorf("%s logged a refusal:\n%s", upper.Mnt, out)
	}
}
