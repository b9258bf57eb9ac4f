package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// goodBlock is a valid block file for id with a small payload.
func goodBlock(id string) []byte {
	bid, _ := format.ParseID(id)
	payload := []byte(strings.Repeat("kv", 512))
	h := format.BlockHeader{ID: bid, NumLayers: 2, BlockSize: 4, Dtype: format.Uint8,
		PayloadCRC: format.CRC32C(payload), Flags: format.FlagCRC, PayloadLen: uint64(len(payload))}
	return format.NewBlock(h, payload)
}

// writeVerdict writes data to path with open(O_CREAT|O_EXCL|O_WRONLY),
// write, close, and returns the first error: the mount's verdict.
func writeVerdict(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// serving checks that the daemon still answers: stats read, and a new
// block is published and read back.
func serving(t *testing.T, d *daemon, after string) {
	t.Helper()
	if !d.alive() {
		t.Fatalf("after %s: the daemon exited\n%s", after, d.out.String())
	}
	if _, err := os.ReadFile(d.path(".ucm", "stats")); err != nil {
		t.Fatalf("after %s: stats: %v", after, err)
	}
	id := testIDs("serving-"+after, 1)[0]
	data := goodBlock(id)
	p := blockPath(d.Mnt, "m", id)
	if err := writeVerdict(p, data); err != nil {
		t.Fatalf("after %s: publishing a good block: %v", after, err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != string(data) {
		t.Fatalf("after %s: reading it back: %v", after, err)
	}
}

// TestBadInput sends bad names, bad headers and refused operations; each
// gets its errno (docs/spec.md §2, §4, §6, §7) and the daemon keeps serving.
func TestBadInput(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--max-file-size", "1MiB"}})
	if err := os.Mkdir(d.path("m"), 0o755); err != nil {
		t.Fatal(err)
	}
	pub := testIDs("bad-published", 1)[0]
	pubPath := blockPath(d.Mnt, "m", pub)
	if err := writeVerdict(pubPath, goodBlock(pub)); err != nil {
		t.Fatal(err)
	}
	fresh := func(salt string) (string, string) {
		id := testIDs("bad-"+salt, 1)[0]
		return id, blockPath(d.Mnt, "m", id)
	}
	corrupt := func(salt string, mutate func(b []byte) []byte) func() error {
		id, p := fresh(salt)
		return func() error { return writeVerdict(p, mutate(goodBlock(id))) }
	}
	other := testIDs("bad-other", 1)[0]

	cases := []struct {
		name string
		want syscall.Errno
		op   func() error
	}{
		{"create a non-id name", syscall.EINVAL, func() error { return writeVerdict(d.path("m", "00", "notanid.bin"), nil) }},
		{"create in the wrong shard", syscall.EINVAL, func() error {
			id, _ := fresh("shard")
			wrong := "00"
			if id[:2] == "00" {
				wrong = "01"
			}
			return writeVerdict(d.path("m", wrong, id+".bin"), goodBlock(id))
		}},
		{"create a .txt", syscall.EINVAL, func() error { id, _ := fresh("txt"); return writeVerdict(d.path("m", id[:2], id+".txt"), nil) }},
		{"look up a non-id name", syscall.ENOENT, func() error { _, err := os.Stat(d.path("m", "00", "nonsense")); return err }},
		{"mkdir a dot model", syscall.EINVAL, func() error { return os.Mkdir(d.path(".hidden"), 0o755) }},
		{"mkdir a model with a space", syscall.EINVAL, func() error { return os.Mkdir(d.path("a b"), 0o755) }},
		{"mkdir a 201-byte model", syscall.EINVAL, func() error { return os.Mkdir(d.path(strings.Repeat("x", 201)), 0o755) }},
		{"header id differs from the name", syscall.EINVAL, corrupt("id", func([]byte) []byte { return goodBlock(other) })},
		{"bad magic", syscall.EINVAL, corrupt("magic", func(b []byte) []byte { b[0] = 'X'; return b })},
		{"bad payload CRC", syscall.EINVAL, corrupt("crc", func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b })},
		{"short payload", syscall.EINVAL, corrupt("short", func(b []byte) []byte { return b[:len(b)-10] })},
		{"shorter than a header", syscall.EINVAL, corrupt("tiny", func(b []byte) []byte { return b[:40] })},
		{"unknown dtype", syscall.EINVAL, corrupt("dtype", func(b []byte) []byte { b[32] = 99; return b })},
		{"oversize file", syscall.EFBIG, corrupt("big", func(b []byte) []byte { return append(b, make([]byte, 2<<20)...) })},
		{"create a published id with O_EXCL", syscall.EEXIST, func() error { return writeVerdict(pubPath, goodBlock(pub)) }},
		{"create a published id without O_EXCL", syscall.EACCES, func() error {
			f, err := os.OpenFile(pubPath, os.O_CREATE|os.O_WRONLY, 0o444)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"truncate a block", syscall.EPERM, func() error { return os.Truncate(pubPath, 10) }},
		{"rename a block", syscall.EPERM, func() error { return os.Rename(pubPath, blockPath(d.Mnt, "m", other)) }},
		{"hard link a block", syscall.EPERM, func() error { return os.Link(pubPath, blockPath(d.Mnt, "m", other)) }},
		{"symlink", syscall.EPERM, func() error { return os.Symlink(pubPath, blockPath(d.Mnt, "m", other)) }},
		{"mknod", syscall.EPERM, func() error { return unix.Mknod(blockPath(d.Mnt, "m", other), unix.S_IFIFO|0o644, 0) }},
		{"unknown user.ucm xattr", syscall.ENODATA, func() error { _, err := unix.Getxattr(pubPath, "user.ucm.nope", nil); return err }},
		{"write a read-only xattr", syscall.EPERM, func() error { return unix.Setxattr(pubPath, "user.ucm.hash", []byte("0"), 0) }},
		{"bad pinned value", syscall.EINVAL, func() error { return unix.Setxattr(pubPath, "user.ucm.pinned", []byte("yes"), 0) }},
	}
	for _, c := range cases {
		err := c.op()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		serving(t, d, strings.ReplaceAll(c.name, " ", "-"))
	}

	// A rejected block left nothing behind, and the published one is intact.
	if got, err := os.ReadFile(pubPath); err != nil || string(got) != string(goodBlock(pub)) {
		t.Errorf("published block changed: %v", err)
	}
	if _, err := os.Stat(blockPath(d.Mnt, "m", testIDs("bad-crc", 1)[0])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a rejected block is visible: %v", err)
	}

	// The client reports the close() verdict by errno name.
	raw := filepath.Join(testDir(t), "raw")
	bad := goodBlock(other)
	bad[4] = 7 // version
	os.WriteFile(raw, bad, 0o644)
	if r := py(t, "put-raw", blockPath(d.Mnt, "m", other), raw); r.Code != 3 || r.Errno() != "EINVAL" {
		t.Errorf("client put-raw of a bad header: exit %d, errno %q (%s)", r.Code, r.Errno(), r.Err)
	}
	serving(t, d, "client-bad-header")
}
