package tiers

import (
	"context"
	"crypto/md5"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// TestWrittenBackVersionNeverTornAfterPowerCut (soak seeds
// 1796638164599371870, 1796638164599371907): a version published
// without fsync and written back (no fsync), whose directory a durable
// publish of another file then fsyncs, so that its name is durable and
// its bytes were not, before a power cut that tears them. After the cut
// the name gives a version whole, or none where none was durable: for a
// new version of a file, the old one acknowledged durable or the new
// one; for a raw block (no header to refuse it by), the block or
// nothing. It gave the torn bytes (the crash disk lost the CRC xattr
// with them, so the check had nothing to refuse them by), and once the
// CRC refused them, the file had no version at all.
func TestWrittenBackVersionNeverTornAfterPowerCut(t *testing.T) {
	raw := format.Key{Model: "posix", ID: format.ID(md5.Sum([]byte("r"))), Kind: format.RawKind(0)}
	rawNext := format.Key{Model: "posix", ID: format.ID(md5.Sum([]byte("q"))), Kind: format.RawKind(0)}
	cases := []struct {
		name       string
		key, other format.Key
		durable    []byte // acknowledged durable first, nil: none
	}{
		{"file", format.FileKey("files", "d/a.bin"), format.FileKey("files", "d/b.bin"), []byte("v0, durable")},
		{"raw block", raw, rawNext, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, disk := crashStack(t, StackConfig{DirtyExpire: time.Hour})
			disk.Torn = true
			disk.TornLen = func(n int) int { return n / 2 }
			put := func(k format.Key, data []byte, durable bool) {
				t.Helper()
				var err error
				if k.Kind == format.File {
					err = putFile(s, k, data, durable)
				} else {
					_, err = s.Put(k, data, durable)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if c.durable != nil {
				put(c.key, c.durable, true)
			}
			later := []byte("v1, published without fsync and written back")
			put(c.key, later, false)
			if err := s.writeBack(c.key, false); err != nil { // as the write-back pool does
				t.Fatal(err)
			}
			put(c.other, []byte("another file of the directory, durable"), true)
			disk.PowerCut()
			s.Close(context.Background())
			if err := disk.Restore(); err != nil {
				t.Fatal(err)
			}
			no := false
			s = buildStack(t, StackConfig{}, MemConfig{Capacity: 8 << 20}, DirConfig{Kind: "nvme", Dir: disk.Dir(), SyncOnCommit: &no, OpenFS: disk.Open})
			h, err := s.Open(c.key)
			if err != nil {
				if c.durable != nil {
					t.Fatalf("%s after the power cut: %v, want %q or %q", c.key, err, c.durable, later)
				}
				return // nothing was durable: none is a version
			}
			h.File.Close()
			if got := readAll(t, s, c.key); string(got) != string(later) && string(got) != string(c.durable) {
				t.Fatalf("%s after the power cut: %q, want a version whole", c.key, got)
			}
		})
	}
}
