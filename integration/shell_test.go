package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// sh runs a command and returns its stdout; it fails the test on error.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	requireTool(t, name)
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
}

// TestShellTools looks at a mount the way an admin does: ls, stat, du,
// getfattr, rm, and back up and restore a model with tar and cp -r.
func TestShellTools(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	const model = "org--Model-7B"
	sh(t, "mkdir", d.path(model))
	ids := testIDs("shell", 12)
	mustPy(t, append([]string{"put", d.Mnt, model, "--seed", "5"}, ids...)...)
	mustPy(t, "put", d.Mnt, model, "--fsync", "--seed", "5", ids[0])

	if got := strings.Fields(sh(t, "ls", d.Mnt)); !slices.Contains(got, model) {
		t.Errorf("ls %s: %v", d.Mnt, got)
	}
	if got := strings.Fields(sh(t, "ls", "-a", d.Mnt)); !slices.Contains(got, ".ucm") {
		t.Errorf("ls -a %s: %v, want .ucm", d.Mnt, got)
	}
	if got := strings.Fields(sh(t, "ls", d.path(model))); len(got) != 256 || got[0] != "00" || got[255] != "ff" {
		t.Errorf("ls %s: %d entries, want the 256 shards 00..ff", model, len(got))
	}
	if got := strings.Fields(sh(t, "ls", d.path(model, ids[1][:2]))); !slices.Contains(got, ids[1]+".bin") {
		t.Errorf("ls of shard %s: %v", ids[1][:2], got)
	}

	// stat: exact size, st_blocks = ceil(size/512), mode 0444.
	f := blockPath(d.Mnt, model, ids[1])
	want := fmt.Sprintf("%d %d 512 444 regular file", testSize, (testSize+511)/512)
	if got := strings.TrimSpace(sh(t, "stat", "-c", "%s %b %B %a %F", f)); got != want {
		t.Errorf("stat: %q, want %q", got, want)
	}
	// du: apparent bytes per file, and the exact 512-byte block count.
	if got := strings.Fields(sh(t, "du", "-b", f))[0]; got != strconv.Itoa(testSize) {
		t.Errorf("du -b: %s, want %d", got, testSize)
	}
	sum := 0
	for _, line := range strings.Split(strings.TrimSpace(sh(t, "du", "-a", "-B512", d.path(model))), "\n") {
		if fs := strings.Fields(line); len(fs) == 2 && strings.HasSuffix(fs[1], ".bin") {
			n, _ := strconv.Atoi(fs[0])
			sum += n
		}
	}
	if want := len(ids) * ((testSize + 511) / 512); sum != want {
		t.Errorf("du -a -B512: block files use %d blocks, want %d", sum, want)
	}

	// getfattr shows the header, the CRC and the placement.
	attrs := sh(t, "getfattr", "-d", "-m", "user.ucm", f)
	for _, w := range []string{
		`user.ucm.hash="` + ids[1] + `"`, `user.ucm.model="` + model + `"`, `user.ucm.num_layers="4"`,
		`user.ucm.block_size="16"`, `user.ucm.dtype="float16"`, `user.ucm.num_kv_heads="2"`,
		`user.ucm.head_dim="64"`, fmt.Sprintf(`user.ucm.payload_bytes="%d"`, testPayload), `user.ucm.tiers="mem`,
	} {
		if !strings.Contains(attrs, w) {
			t.Errorf("getfattr lacks %s:\n%s", w, attrs)
		}
	}
	raw, _ := os.ReadFile(f)
	if w := `user.ucm.crc32c="` + format.FormatCRC(format.CRC32C(raw[64:])) + `"`; !strings.Contains(attrs, w) {
		t.Errorf("getfattr lacks %s", w)
	}
	if got := mustPy(t, "xattrs", f); !strings.Contains(got, "user.ucm.hash="+ids[1]) {
		t.Errorf("client xattrs: %s", got)
	}
	if m := sh(t, "getfattr", "-n", "user.ucm.blocks", "--only-values", d.path(model)); m != strconv.Itoa(len(ids)) {
		t.Errorf("user.ucm.blocks of the model: %q, want %d", m, len(ids))
	}

	// A shell redirection writes a block: the shell opens the file, moves
	// the descriptor to stdout (dup2) and closes the original before cat
	// writes a byte; that first close must not publish an empty file.
	saved, err := os.ReadFile(blockPath(d.Mnt, model, ids[2]))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(testDir(t), "saved.bin")
	if err := os.WriteFile(src, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, "rm", blockPath(d.Mnt, model, ids[2]))
	sh(t, "sh", "-c", `cat "$1" > "$2"`, "sh", src, blockPath(d.Mnt, model, ids[2]))
	sh(t, "rm", blockPath(d.Mnt, model, ids[2]))
	sh(t, "dd", "if="+src, "of="+blockPath(d.Mnt, model, ids[2]), "bs=64k", "status=none")
	mustPy(t, "verify", d.Mnt, model, "--seed", "5", ids[2])
	// A file closed empty is refused at its last release: nothing appears.
	empty := blockPath(d.Mnt, model, testIDs("shell-empty", 1)[0])
	sh(t, "sh", "-c", `: > "$1"`, "sh", empty)
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty block after its close: %v", err)
	}

	// rm removes the block from the mount and from the tier.
	sh(t, "rm", blockPath(d.Mnt, model, ids[0]))
	if _, err := os.Stat(blockPath(d.Mnt, model, ids[0])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after rm: %v", err)
	}
	if _, err := os.Stat(blockPath(d.Tier, model, ids[0])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after rm, the tier still has it: %v", err)
	}
	ids = ids[1:]

	// Export with tar, byte for byte.
	export := filepath.Join(testDir(t), "export")
	os.Mkdir(export, 0o755)
	tarball := filepath.Join(export, "model.tar")
	sh(t, "tar", "-C", d.Mnt, "-cf", tarball, model)
	sh(t, "tar", "-C", export, "-xf", tarball)
	mustPy(t, append([]string{"verify", export, model, "--seed", "5"}, ids...)...)
	if got := listBlocks(t, export, model); len(got) != len(ids) {
		t.Errorf("tar exported %d blocks, want %d", len(got), len(ids))
	}

	// Stop the daemon: its tier directory is now a complete block store.
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	sh(t, ucmfsBin, "fsck", d.Tier)
	mustPy(t, append([]string{"verify", d.Tier, model, "--seed", "5"}, ids...)...)

	// Import that tier directory into a second mount with cp -r. The
	// model directory is made first: a new model has its 256 shard
	// directories already, and cp -r into a directory it just created
	// would try to mkdir them (EEXIST). -n skips blocks already present
	// (creating a published id again is EACCES).
	d2 := mountUCM(t, mountOpts{})
	sh(t, "mkdir", d2.path(model))
	sh(t, "cp", "-r", filepath.Join(d.Tier, model)+"/.", d2.path(model)+"/")
	extra := testIDs("shell-extra", 1)
	makeShards(t, d.Tier, model, extra)
	mustPy(t, "put", d.Tier, model, "--seed", "5", extra[0])
	sh(t, "cp", "-rn", filepath.Join(d.Tier, model)+"/.", d2.path(model)+"/")
	ids = append(ids, extra[0])
	mustPy(t, append([]string{"verify", d2.Mnt, model, "--seed", "5"}, ids...)...)
	if got := listBlocks(t, d2.Mnt, model); len(got) != len(ids) {
		t.Errorf("cp -r imported %d blocks, want %d", len(got), len(ids))
	}
}
