package tiers

import (
	"fmt"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// checkHeader checks the 64 header bytes of key's file on src before they
// are served or copied: against the header CRC-32C a directory tier keeps
// (format.HeaderCRCXattr), then by the format's header rules
// (format.ValidateBlock or ValidateRepr, all but the payload CRC, which
// the caller checks). Raw blocks have no header. Files of the memory tier were validated when they
// were published and are not checked again. A failure wraps ErrCorrupt:
// the caller quarantines the file and the block is a miss.
func checkHeader(src Tier, key format.Key, hdr []byte, size int64) error {
	d, ok := src.(tier.Lower)
	if !ok || registry.Of(key).Headerless() {
		return nil // a raw block (ucm-posix) or a File has no header: its CRC covers it all
	}
	if len(hdr) < format.HeaderSize || size < format.HeaderSize {
		return fmt.Errorf("%w: %s on %s: %d bytes, shorter than the header", ErrCorrupt, key, src.Name(), size)
	}
	want, has, err := d.HeaderCRC(key)
	if err != nil {
		return err
	}
	if got := format.HeaderCRC(hdr); has && got != want {
		return fmt.Errorf("%w: %s on %s: header CRC-32C %08x, expected %08x", ErrCorrupt, key, src.Name(), got, want)
	}
	if registry.Of(key).IsSidecar(key) {
		var h format.ReprHeader
		if h, err = format.DecodeReprHeader(hdr); err == nil {
			err = format.ValidateRepr(h, key.ID, size, nil)
		}
	} else {
		var h format.BlockHeader
		if h, err = format.DecodeBlockHeader(hdr); err == nil {
			err = format.ValidateBlock(h, key.ID, size, nil)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %s on %s: %w", ErrCorrupt, key, src.Name(), err)
	}
	return nil
}
