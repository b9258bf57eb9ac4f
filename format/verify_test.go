package format

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// setXattr sets the CRC xattr, skipping the test where the file system has
// no user xattrs.
func setXattr(t *testing.T, path, value string) {
	t.Helper()
	err := syscall.Setxattr(path, CRCXattr, []byte(value), 0)
	if errors.Is(err, syscall.ENOTSUP) {
		t.Skipf("no user xattrs on %s", filepath.Dir(path))
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestVerifyFileValid(t *testing.T) {
	dir := t.TempDir()
	bh, bp := goldenBlock()
	rh, rp := goldenRepr()
	blk := writeFile(t, dir, goldenID.String()+".bin", NewBlock(bh, bp))
	rep := writeFile(t, dir, goldenID.String()+".repr", NewRepr(rh, rp))

	r, err := InspectFile(blk)
	if err != nil || !r.Decoded || !r.NameOK || r.Kind != Block || r.ID != goldenID ||
		r.Size != 64+256 || !r.CRCDone || r.CRC != goldenBlockCRC || r.HasXattrCRC {
		t.Fatalf("block: %+v, %v", r, err)
	}
	r, err = InspectFile(rep)
	if err != nil || r.Kind != Repr || r.Repr.Kind != ReprSignHash || r.CRC != goldenReprCRC {
		t.Fatalf("repr: %+v, %v", r, err)
	}
	// An unflagged block is valid and its CRC is not computed.
	bh.Flags = 0
	plain := make([]byte, 64+256)
	bh.PayloadLen = 256
	bh.Encode(plain)
	copy(plain[64:], bp)
	p := writeFile(t, t.TempDir(), goldenID.String()+".bin", plain)
	if r, err := InspectFile(p); err != nil || r.CRCDone {
		t.Fatalf("unflagged: %+v, %v", r, err)
	}
}

func TestVerifyFileXattr(t *testing.T) {
	dir := t.TempDir()
	bh, bp := goldenBlock()
	p := writeFile(t, dir, goldenID.String()+".bin", NewBlock(bh, bp))
	setXattr(t, p, FormatCRC(goldenBlockCRC))
	if r, err := InspectFile(p); err != nil || !r.HasXattrCRC || r.XattrCRC != goldenBlockCRC {
		t.Fatalf("matching xattr: %+v, %v", r, err)
	}
	setXattr(t, p, "deadbeef")
	if err := VerifyFile(p); RuleOf(err) != RuleXattrCRC || !errors.Is(err, ErrFormat) {
		t.Fatalf("mismatching xattr: %v", err)
	}
	setXattr(t, p, "DEADBEEF") // malformed: ignored
	if r, err := InspectFile(p); err != nil || r.HasXattrCRC {
		t.Fatalf("malformed xattr: %+v, %v", r, err)
	}
	// The xattr is checked also when the header has no CRC.
	bh.Flags = 0
	plain := make([]byte, 64+256)
	bh.Encode(plain)
	copy(plain[64:], bp)
	q := writeFile(t, t.TempDir(), goldenID.String()+".bin", plain)
	setXattr(t, q, "00000000")
	if err := VerifyFile(q); RuleOf(err) != RuleXattrCRC {
		t.Fatalf("unflagged block, wrong xattr: %v", err)
	}
}

func TestVerifyFileInvalid(t *testing.T) {
	dir := t.TempDir()
	bh, bp := goldenBlock()
	good := NewBlock(bh, bp)
	rh, rp := goldenRepr()
	name := goldenID.String()

	corrupt := append([]byte(nil), good...)
	corrupt[100] ^= 0xff
	wrongID := mustID("0157b0468367bd7d6faa9645fada2bb5").String()

	cases := []struct {
		name string
		file string
		data []byte
		rule Rule
		base error
	}{
		{"bad crc", name + ".bin", corrupt, RuleCRC, ErrFormat},
		{"wrong id", wrongID + ".bin", good, RuleID, ErrFormat},
		{"short", name + ".bin", good[:40], RuleSize, ErrFormat},
		{"short repr", name + ".repr", good[:40], RuleSize, ErrFormat},
		{"truncated payload", name + ".bin", good[:len(good)-1], RulePayloadLen, ErrFormat},
		{"block named repr", name + ".repr", good, RuleMagic, ErrFormat},
		{"repr named bin", name + ".bin", NewRepr(rh, rp), RuleMagic, ErrFormat},
		{"no name, no magic", "blob.dat", make([]byte, 100), RuleKindOfFile, ErrFormat},
		{"bad name, block magic", "blob.dat", good, "", ErrName},
		{"upper-case name", "569D97E717439E91327F78B6BD995559.bin", good, "", ErrName},
	}
	for _, c := range cases {
		p := writeFile(t, t.TempDir(), c.file, c.data)
		err := VerifyFile(p)
		if !errors.Is(err, c.base) || RuleOf(err) != c.rule {
			t.Errorf("%s: err %v (rule %q), want %v rule %q", c.name, err, RuleOf(err), c.base, c.rule)
		}
	}
	// A decodable header with a bad name is still reported.
	p := writeFile(t, dir, "blob.dat", good)
	if r, err := InspectFile(p); !errors.Is(err, ErrName) || !r.Decoded || r.Kind != Block || r.Block.NumLayers != 2 {
		t.Errorf("bad name report: %+v, %v", r, err)
	}
	if err := VerifyFile(filepath.Join(dir, "absent.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
	if err := VerifyFile(dir); !errors.Is(err, ErrName) {
		t.Errorf("directory: %v", err)
	}
}

// TestInspectFIFO: a FIFO named by mistake is refused at once as not a
// regular file, instead of waiting for a writer forever.
func TestInspectFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0123456789abcdef0123456789abcdef.bin")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	// Before the fix this call never returned (the test binary's timeout
	// ended it).
	if _, err := InspectFile(p); !errors.Is(err, ErrName) {
		t.Errorf("inspect of a FIFO: %v, want ErrName", err)
	}
}
