package dir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// Index snapshots
//
// A directory tier of an unshared kind writes its index to SnapshotFileName
// in its root when it closes cleanly, and the next start takes from it,
// shard directory by shard directory, what it would otherwise list and
// stat file by file: at 10^6 blocks the rebuild goes from 10^6 fstatat
// calls to one per shard directory.
//
// A shard's part is trusted only when it matches the tier: the snapshot
// records each shard directory's ctime, and the start takes the part only
// when the directory's ctime is still that one. Every change of a
// directory's entries (a file created, renamed in or out, removed: the
// only ways a tier file comes or goes, since files are never written in
// place) sets its ctime to the current time, and ctime cannot be set by
// hand, so a shard changed by anyone after the snapshot (another tool, a
// daemon that crashed later, fsck --repair) is listed again. Timestamps
// are coarse (a clock tick), so a shard whose recorded ctime is within
// snapshotSlack of the snapshot's own time is listed again too: a change
// in the same tick would not show. A snapshot that does not read whole
// (length, magic, CRC-32C) is ignored; models or shards it does not name
// are listed. After a crash the last clean snapshot still serves the
// shards that did not change since.
//
// Format, little-endian: "UCMIDX1\n", the snapshot time (int64 ns), then
// per model: name length (uint16) and name, number of shards (uint16),
// per shard: shard byte, ctime (int64 ns), number of entries (uint32), per
// entry: id (16 bytes), kind (1), size (int64), mtime (int64 ns); then the
// CRC-32C of all that (uint32).

// SnapshotFileName is the index snapshot in a directory tier's root.
const SnapshotFileName = ".ucmfs.index"

const (
	snapMagic     = "UCMIDX1\n"
	snapEntrySize = format.IDLen + 1 + 8 + 8
	snapshotSlack = 100 * time.Millisecond
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapShard is one shard's part of a loaded snapshot.
type snapShard struct {
	ctime int64
	data  []byte // its entries, snapEntrySize bytes each
}

// snapshot is a loaded snapshot: the trusted shards by model and shard.
type snapshot map[string]*[256]*snapShard

// writeSnapshot writes the index to the snapshot file (a temp file, then
// a rename). It is called at Close, after the last change.
func (t *Tier) writeSnapshot() error {
	start := time.Now().UnixNano()
	buf := binary.LittleEndian.AppendUint64([]byte(snapMagic), uint64(start))
	for _, model := range t.idx.ModelNames() {
		if tier.IsTree(t.fs, model) {
			continue // a tree of Files is walked at start: its directories are no shards
		}
		var ctimes [256]int64
		for hh := range 256 {
			var st unix.Stat_t
			if err := t.fs.Stat(model+"/"+format.ShardName(byte(hh)), &st); err == nil {
				ctimes[hh] = st.Ctim.Nano()
			}
		}
		buf = appendSnapshot(t.idx, buf, model, &ctimes)
	}
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
	tmp := SnapshotFileName + ".tmp"
	if err := t.fs.WriteFile(tmp, buf, 0o600); err != nil {
		return err
	}
	return t.fs.Rename(tmp, SnapshotFileName, 0)
}

// appendSnapshot appends model's part (the shards with a ctime) to buf.
func appendSnapshot(x *index.Index, buf []byte, model string, ctimes *[256]int64) []byte {
	n := 0
	for hh := range 256 {
		if ctimes[hh] != 0 {
			n++
		}
	}
	written := false
	x.EachShard(model, func(hh byte, count int, entries iter.Seq[*index.Entry]) {
		if !written {
			buf = binary.LittleEndian.AppendUint16(buf, uint16(len(model)))
			buf = append(buf, model...)
			buf = binary.LittleEndian.AppendUint16(buf, uint16(n))
			written = true
		}
		if ctimes[hh] == 0 {
			return
		}
		buf = append(buf, hh)
		buf = binary.LittleEndian.AppendUint64(buf, uint64(ctimes[hh]))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(count))
		for e := range entries {
			buf = append(buf, e.ID[:]...)
			buf = append(buf, byte(e.Kind))
			buf = binary.LittleEndian.AppendUint64(buf, uint64(e.Size))
			buf = binary.LittleEndian.AppendUint64(buf, uint64(e.MTime))
		}
	})
	return buf
}

var errSnapshot = errors.New("index snapshot unreadable")

// loadSnapshot reads the snapshot file; nil when there is none or it does
// not read whole. Shards recorded within snapshotSlack of the snapshot's
// time are left out (listed again).
func (t *Tier) loadSnapshot() snapshot {
	data, err := t.fs.ReadFile(SnapshotFileName)
	if err != nil {
		return nil
	}
	s, err := parseSnapshot(data)
	if err != nil {
		t.log.Warn("tier rebuild: ignoring the index snapshot", "kind", t.kind, "dir", t.root, "err", err)
		return nil
	}
	return s
}

func parseSnapshot(data []byte) (snapshot, error) {
	if len(data) < len(snapMagic)+8+4 || string(data[:len(snapMagic)]) != snapMagic {
		return nil, fmt.Errorf("%w: no magic", errSnapshot)
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(body):]) {
		return nil, fmt.Errorf("%w: CRC mismatch", errSnapshot)
	}
	le := binary.LittleEndian
	taken := int64(le.Uint64(body[len(snapMagic):]))
	p := body[len(snapMagic)+8:]
	need := func(n int) bool { return len(p) >= n }
	s := snapshot{}
	for len(p) > 0 {
		if !need(2) || !need(2+int(le.Uint16(p))+2) {
			return nil, fmt.Errorf("%w: truncated model", errSnapshot)
		}
		nl := int(le.Uint16(p))
		model := string(p[2 : 2+nl])
		shards := int(le.Uint16(p[2+nl:]))
		p = p[2+nl+2:]
		parts := &[256]*snapShard{}
		for range shards {
			if !need(1 + 8 + 4) {
				return nil, fmt.Errorf("%w: truncated shard", errSnapshot)
			}
			hh, ctime, count := p[0], int64(le.Uint64(p[1:])), int(le.Uint32(p[9:]))
			p = p[13:]
			if !need(count * snapEntrySize) {
				return nil, fmt.Errorf("%w: truncated entries", errSnapshot)
			}
			if ctime < taken-snapshotSlack.Nanoseconds() {
				parts[hh] = &snapShard{ctime: ctime, data: p[:count*snapEntrySize]}
			}
			p = p[count*snapEntrySize:]
		}
		s[model] = parts
	}
	return s, nil
}

// shard returns the trusted part of <model>/<hh> (the directory rel
// beneath r) when the directory's ctime is the recorded one, else nil.
func (s snapshot) shard(r rootfs.FS, rel, model string, hh byte) *snapShard {
	parts := s[model]
	if parts == nil || parts[hh] == nil {
		return nil
	}
	var st unix.Stat_t
	if err := r.Stat(rel, &st); err != nil || st.Ctim.Nano() != parts[hh].ctime {
		return nil
	}
	return parts[hh]
}

// entries decodes the part into index entries of model (one allocation).
func (sh *snapShard) entries(model string) []*index.Entry {
	le := binary.LittleEndian
	n := len(sh.data) / snapEntrySize
	block := index.NewEntries(model, n)
	out := make([]*index.Entry, n)
	for i := range block {
		b := sh.data[i*snapEntrySize:]
		e := &block[i]
		copy(e.ID[:], b[:format.IDLen])
		e.Kind = format.Kind(b[format.IDLen])
		e.Size = int64(le.Uint64(b[format.IDLen+1:]))
		e.MTime = int64(le.Uint64(b[format.IDLen+9:]))
		out[i] = e
	}
	return out
}
