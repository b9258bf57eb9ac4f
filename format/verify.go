package format

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// FileReport is what InspectFile learned about one block or sidecar file.
type FileReport struct {
	Path   string
	Kind   Kind  // from the extension, else from the magic
	NameOK bool  // the base name is <id>.bin or <id>.repr
	ID     ID    // the id of the file name, when NameOK
	Size   int64 // file size in bytes
	// Decoded is set when the header decoded; Block or Repr (by Kind)
	// then holds it.
	Decoded bool
	Block   BlockHeader
	Repr    ReprHeader
	// CRC is the payload CRC-32C, when it was computed (CRCDone): for a
	// header with FlagCRC or a file with a CRCXattr.
	CRC     uint32
	CRCDone bool
	// XattrCRC is the value of CRCXattr, when the file has a well-formed one.
	XattrCRC    uint32
	HasXattrCRC bool
	// Raw is set by InspectRawFile: the file is all payload, no header.
	Raw bool
}

// VerifyFile checks one block (<id>.bin) or sidecar (<id>.repr) file: its
// base name, its header (DecodeBlockHeader / DecodeReprHeader), every rule
// of ValidateBlock / ValidateRepr including the CRC when flagged, and, when
// the file has a CRCXattr of 8 lowercase hex characters, the payload
// against it, and when it has a HeaderCRCXattr, the 64 header bytes against
// that (first: a damaged header is not decoded as if it were whole). It does not look at the directory layout nor, for a sidecar,
// at its block. Broken rules wrap ErrFormat, bad names ErrName; I/O errors
// are returned as they are.
func VerifyFile(path string) error {
	_, err := InspectFile(path)
	return err
}

// openRegular opens the regular file at path for reading and returns its
// size; anything else is an ErrName. O_NONBLOCK: a FIFO (or a device)
// named by mistake answers at once instead of waiting for a writer; a
// regular file's reads ignore it.
func openRegular(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%w: %s is not a regular file", ErrName, path)
	}
	return f, st.Size(), nil
}

// InspectRawFile checks a raw file: a block of the ucm-posix layout or a
// file of the files layout, all payload with no header and no rule on
// its name or size. When it has a CRCXattr of 8 lowercase hex characters,
// its bytes must match it (a FormatError of RawFormat, RuleXattrCRC);
// without one, the size is all there is to check. The CRC is computed
// only when there is one to compare with.
func InspectRawFile(path string) (FileReport, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return FileReport{Path: path, Raw: true}, err
	}
	defer f.Close()
	return InspectRawOpen(f)
}

// InspectRawOpen is InspectRawFile of an open regular file (its path is
// f.Name(); no path is resolved again: the attributes are read through f).
func InspectRawOpen(f *os.File) (FileReport, error) {
	r := FileReport{Path: f.Name(), Raw: true}
	fi, err := f.Stat()
	if err != nil {
		return r, err
	}
	r.Size = fi.Size()
	r.XattrCRC, r.HasXattrCRC, err = readCRCXattrOf(f, CRCXattr)
	if err != nil || !r.HasXattrCRC {
		return r, err
	}
	if r.CRC, err = crcOf(f, 0, r.Size); err != nil {
		return r, err
	}
	r.CRCDone = true
	if r.CRC != r.XattrCRC {
		return r, &FormatError{Format: RawFormat, Rule: RuleXattrCRC,
			Detail: fmt.Sprintf("CRC-32C is %08x, %s says %08x", r.CRC, CRCXattr, r.XattrCRC)}
	}
	return r, nil
}

// InspectFile is VerifyFile returning, beside the verdict, everything it
// decoded (also when the verdict is an error).
func InspectFile(path string) (FileReport, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return FileReport{Path: path}, err
	}
	defer f.Close()
	return InspectOpen(f)
}

// InspectOpen is InspectFile of an open regular file (its path is
// f.Name(); no path is resolved again: the attributes are read through f).
func InspectOpen(f *os.File) (FileReport, error) {
	path := f.Name()
	r := FileReport{Path: path}
	fi, err := f.Stat()
	if err != nil {
		return r, err
	}
	r.Size = fi.Size()
	hdr := make([]byte, HeaderSize)
	n, err := io.ReadFull(f, hdr)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return r, err
	}
	hdr = hdr[:n]

	base := filepath.Base(path)
	var nameErr error
	switch {
	case strings.HasSuffix(base, Block.Ext()), strings.HasSuffix(base, Repr.Ext()):
		r.Kind = Block
		if strings.HasSuffix(base, Repr.Ext()) {
			r.Kind = Repr
		}
		r.ID, _, nameErr = ParseFileName("", base)
	case len(hdr) >= 4 && string(hdr[:4]) == BlockMagic:
		r.Kind, nameErr = Block, fmt.Errorf("%w: %q is not <id>.bin", ErrName, base)
	case len(hdr) >= 4 && string(hdr[:4]) == ReprMagic:
		r.Kind, nameErr = Repr, fmt.Errorf("%w: %q is not <id>.repr", ErrName, base)
	default:
		return r, &FormatError{Format: "UCMB/UCMR", Rule: RuleKindOfFile,
			Detail: fmt.Sprintf("%s has neither a .bin/.repr name nor a UCMB/UCMR magic", base)}
	}
	r.NameOK = nameErr == nil

	if r.Size < HeaderSize {
		if r.Kind == Repr {
			return r, reprErr(RuleSize, "file is %d bytes, shorter than the %d-byte header", r.Size, HeaderSize)
		}
		return r, blockErr(RuleSize, "file is %d bytes, shorter than the %d-byte header", r.Size, HeaderSize)
	}
	if hcrc, ok, err := readCRCXattrOf(f, HeaderCRCXattr); err != nil {
		return r, err
	} else if ok && HeaderCRC(hdr) != hcrc {
		return r, &FormatError{Format: r.formatName(), Rule: RuleXattrHCRC,
			Detail: fmt.Sprintf("header CRC-32C is %08x, %s says %08x", HeaderCRC(hdr), HeaderCRCXattr, hcrc)}
	}
	if r.Kind == Repr {
		r.Repr, err = DecodeReprHeader(hdr)
	} else {
		r.Block, err = DecodeBlockHeader(hdr)
	}
	if err != nil {
		return r, err
	}
	r.Decoded = true
	if nameErr != nil {
		return r, nameErr
	}

	crc := func() (uint32, error) {
		if !r.CRCDone {
			c, err := payloadCRC(f, r.Size)
			if err != nil {
				return 0, err
			}
			r.CRC, r.CRCDone = c, true
		}
		return r.CRC, nil
	}
	if r.Kind == Repr {
		err = ValidateRepr(r.Repr, r.ID, r.Size, crc)
	} else {
		err = ValidateBlock(r.Block, r.ID, r.Size, crc)
	}
	if err != nil {
		return r, err
	}

	r.XattrCRC, r.HasXattrCRC, err = readCRCXattrOf(f, CRCXattr)
	if err != nil || !r.HasXattrCRC {
		return r, err
	}
	got, err := crc()
	if err != nil {
		return r, err
	}
	if got != r.XattrCRC {
		return r, &FormatError{Format: r.formatName(), Rule: RuleXattrCRC,
			Detail: fmt.Sprintf("payload CRC-32C is %08x, %s says %08x", got, CRCXattr, r.XattrCRC)}
	}
	return r, nil
}

func (r *FileReport) formatName() string {
	if r.Kind == Repr {
		return ReprMagic
	}
	return BlockMagic
}

// payloadCRC is the CRC-32C of the bytes of f after the header.
func payloadCRC(f *os.File, size int64) (uint32, error) {
	return crcOf(f, HeaderSize, size-HeaderSize)
}

// crcOf is the CRC-32C of the n bytes of f from off.
func crcOf(f *os.File, off, n int64) (uint32, error) {
	h := NewCRC32C()
	buf := make([]byte, 256<<10)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, off, n), buf); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}
