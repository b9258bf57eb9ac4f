package tiers

import "golang.org/x/sys/unix"

// Stat describes k: size, CRC, which tiers hold it, dirty and pinned.
// It reads no file, so it costs the same for any block size: the CRC is
// the one a tier already knows, and HasCRC is unset while none does (a
// block published without a CRC in its header, before its write-back
// copy computed one; a file found by a directory tier's rebuild whose
// xattr was not read yet). CRC gets it in every case.
func (s *Stack) Stat(k Key) (BlockInfo, error) {
	var bi BlockInfo
	found := false
	if in, pinned, dirty, ok := s.mem.idx.describe(k); ok {
		bi.Info, found = in, true
		bi.Holders = append(bi.Holders, s.mem.Name())
		bi.Dirty, bi.Pinned = dirty, pinned
	}
	for _, d := range s.dirs {
		in, _, ok := d.idx.get(k) // no error built for a miss
		if !ok {
			var err error
			if !d.shared {
				continue
			}
			if in, err = d.Stat(k); err != nil {
				continue
			}
		}
		if !found {
			bi.Info, found = in, true
		}
		if !bi.HasCRC && in.HasCRC {
			bi.CRC, bi.HasCRC = in.CRC, true
		}
		bi.Holders = append(bi.Holders, d.Name())
	}
	if !found {
		return bi, ErrNotFound
	}
	return bi, nil
}

// CRC returns the payload CRC-32C of k (the bytes after the 64-byte
// header): the one a tier keeps; else, once, the one a directory tier's
// xattr holds; else, once, computed from the memory tier's copy and kept
// there. has is false when only a directory tier holds k and keeps no CRC
// for it (a filesystem without xattrs, a file copied in by hand);
// ErrNotFound when no tier holds k.
func (s *Stack) CRC(k Key) (crc uint32, has bool, err error) {
	bi, err := s.Stat(k)
	if err != nil {
		return 0, false, err
	}
	if bi.HasCRC {
		return bi.CRC, true, nil
	}
	for _, d := range s.dirs {
		if crc, has, err := d.CRC(k); err == nil && has {
			return crc, true, nil
		}
	}
	if len(bi.Holders) > 0 && bi.Holders[0] == s.mem.Name() {
		if crc, ok := s.memCRC(k); ok {
			return crc, true, nil
		}
	}
	return 0, false, nil
}

// memCRC computes the payload CRC-32C of k's copy in the memory tier and
// records it there. It reports false when the copy is gone or unreadable.
func (s *Stack) memCRC(k Key) (uint32, bool) {
	f, err := openFile(s.mem.path(k), unix.O_RDONLY, 0) // not mem.Open: no LRU use
	if err != nil {
		return 0, false
	}
	defer f.Close()
	_, crc, err := payloadCRC(f)
	if err != nil || s.mem.SetCRC(k, crc) != nil {
		return 0, false
	}
	if in, err := s.mem.Stat(k); err == nil && in.HasCRC {
		return in.CRC, true // a copy recorded it first; the same bytes
	}
	return crc, true
}
