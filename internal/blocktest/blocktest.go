// Package blocktest is test support for the tiers' own tests (tiers,
// tiers/dir), which cannot import internal/tiertest (it imports tiers):
// valid blocks named after a model and a number, and files written into a
// tier with their CRC.
package blocktest

import (
	"crypto/md5"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// Block builds a valid block of the given payload size, its id derived
// from (model, n) so tests can find it again.
func Block(model string, n, payload int) (format.Key, []byte) {
	id := format.ID(md5.Sum([]byte(fmt.Sprintf("%s/%d", model, n))))
	data := make([]byte, payload)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	h := format.BlockHeader{ID: id, NumLayers: 1, BlockSize: 1, Dtype: format.Uint8, TensorsPerLayer: 1}
	return format.Key{Model: model, ID: id}, format.NewBlock(h, data)
}

// WriteFile writes data as k into tr, with its CRC-32C.
func WriteFile(t testing.TB, tr tier.Tier, k format.Key, data []byte) {
	t.Helper()
	w, err := tr.Create(k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(tier.CommitOptions{CRC: format.CRC32C(data), HasCRC: true}); err != nil {
		t.Fatal(err)
	}
}
