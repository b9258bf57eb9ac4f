package tier

import (
	"errors"
	"io"
	"os"

	"github.com/ucmfs/ucmfs/format"
)

// PayloadCRC reads f, a file of kind kind, from the start through buf
// and returns its size and the CRC-32C of everything after its header
// (the whole file of a raw block).
func PayloadCRC(f *os.File, kind format.Kind, buf []byte) (int64, uint32, error) {
	hdrLen := kind.HeaderLen()
	var off int64
	var crc uint32
	for {
		n, err := f.ReadAt(buf, off)
		if n > 0 {
			chunk := buf[:n]
			if off < hdrLen {
				chunk = chunk[min(hdrLen-off, int64(n)):]
			}
			crc = format.UpdateCRC32C(crc, chunk)
			off += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return off, crc, nil
		}
		if err != nil {
			return off, crc, err
		}
	}
}
