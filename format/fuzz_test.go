package format

import (
	"bytes"
	"testing"
)

func FuzzDecodeBlockHeader(f *testing.F) {
	h, payload := goldenBlock()
	f.Add(NewBlock(h, payload)[:HeaderSize])
	f.Add(make([]byte, HeaderSize))
	f.Add([]byte("UCMB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeBlockHeader(b)
		if err != nil {
			return
		}
		out := make([]byte, HeaderSize)
		d.Encode(out)
		if !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatalf("re-encoded\n%x\nfrom\n%x", out, b[:HeaderSize])
		}
		// The derived helpers and the validator never panic either.
		_ = d.TensorBytes()
		_ = d.TensorOffset(int(d.NumLayers)-1, int(d.Tensors())-1)
		_ = ValidateBlock(d, d.ID, int64(len(b)), func() (uint32, error) { return CRC32C(b[HeaderSize:]), nil })
	})
}

func FuzzDecodeReprHeader(f *testing.F) {
	h, payload := goldenRepr()
	f.Add(NewRepr(h, payload)[:HeaderSize])
	f.Add(make([]byte, HeaderSize))
	f.Add([]byte("UCMR\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeReprHeader(b)
		if err != nil {
			return
		}
		out := make([]byte, HeaderSize)
		d.Encode(out)
		if !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatalf("re-encoded\n%x\nfrom\n%x", out, b[:HeaderSize])
		}
		_ = ValidateRepr(d, d.ID, int64(len(b)), func() (uint32, error) { return CRC32C(b[HeaderSize:]), nil })
		var blk BlockHeader
		blk.NumLayers, blk.BlockSize = d.NumLayers, d.Rows
		_ = CheckReprForBlock(d, blk)
	})
}
