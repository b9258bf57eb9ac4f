package store

import (
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// BenchmarkAdmitPending10k: one admission (a create, or a write that
// grows a file) while 10^4 files are being written.
func BenchmarkAdmitPending10k(b *testing.B) {
	s := newTestStore(b, Options{MaxPending: 1 << 40, StagingTTL: -1})
	s.budget.maxFiles, s.budget.perUserFiles = 1<<20, 1<<20
	for i := range 10_000 {
		k, _ := testBlock(i, 64)
		d, _, err := s.Writes().Begin(Proc{Tgid: 7, Uid: uint32(1000 + i%8), Gid: 1000}, k, k.ID.String()+format.StagingSuffix, OpenMode{Staging: true, Excl: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(d.Discard)
	}
	b.ResetTimer()
	for range b.N {
		if err := s.admitPending(1000, 4096, false); err != nil {
			b.Fatal(err)
		}
	}
}
