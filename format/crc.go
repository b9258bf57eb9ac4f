package format

import (
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"os"
	"syscall"
	"unsafe"
)

// castagnoli is the CRC-32C table; hash/crc32 uses the SSE4.2 / ARMv8 CRC
// instructions for it when the CPU has them.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the CRC-32C (Castagnoli) checksum of b, as stored in the
// payload_crc32c field of both headers and in the user.ucm.crc32c xattr.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateCRC32C extends crc (the CRC-32C of the bytes so far; 0 for none)
// with b.
func UpdateCRC32C(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// NewCRC32C returns a running CRC-32C, for io.Copy and streaming writers.
func NewCRC32C() hash.Hash32 { return crc32.New(castagnoli) }

// CRCXattr is the extended attribute in which a tier directory may keep the
// payload CRC-32C of a file, as 8 lowercase hex characters.
const CRCXattr = "user.ucm.crc32c"

// HeaderCRCXattr is the extended attribute in which a tier directory keeps
// the CRC-32C of a file's 64 header bytes, as 8 lowercase hex characters:
// the header has no byte left for a checksum of its own, and CRCXattr
// covers the payload only (docs/format.md §5).
const HeaderCRCXattr = "user.ucm.hcrc32c"

// HeaderCRC is the CRC-32C of a header, the value of HeaderCRCXattr.
func HeaderCRC(hdr []byte) uint32 { return CRC32C(hdr[:HeaderSize]) }

// FormatCRC formats a CRC-32C as the 8 lowercase hex characters of
// CRCXattr and of the user.ucm.crc32c attribute of the mount.
func FormatCRC(crc uint32) string { return fmt.Sprintf("%08x", crc) }

// ParseCRC parses exactly 8 lowercase hex characters.
func ParseCRC(s string) (uint32, bool) {
	if len(s) != 8 {
		return 0, false
	}
	var v uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint32(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// readCRCXattrOf reads the CRC kept in the xattr name of the open file f
// (no path resolved again).
func readCRCXattrOf(f *os.File, name string) (crc uint32, ok bool, err error) {
	var buf [64]byte
	n, err := fgetxattr(int(f.Fd()), name, buf[:])
	return crcXattrValue(f.Name(), buf[:], n, err)
}

// fgetxattr is fgetxattr(2) (package syscall has none; format keeps to
// the standard library).
func fgetxattr(fd int, name string, buf []byte) (int, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return 0, err
	}
	n, _, errno := syscall.Syscall6(syscall.SYS_FGETXATTR, uintptr(fd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf)), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// crcXattrValue is what a getxattr of a CRC attribute answered.
func crcXattrValue(path string, buf []byte, n int, err error) (crc uint32, ok bool, _ error) {
	switch {
	case errors.Is(err, syscall.ENODATA), errors.Is(err, syscall.ENOTSUP),
		errors.Is(err, syscall.ERANGE), errors.Is(err, syscall.ENOSYS):
		return 0, false, nil
	case err != nil:
		return 0, false, &os.PathError{Op: "getxattr", Path: path, Err: err}
	}
	crc, ok = ParseCRC(string(buf[:n]))
	return crc, ok, nil
}
