package tier

import (
	"os"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/index"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
)

// Lower is a tier below memory as the stack (package tiers) uses it: a
// directory tier (package tiers/dir) is one, and a tier that is not a
// directory joins the stack by answering the same. The stack holds its
// lower tiers through Lower alone, but for files staged on disk (written
// through their descriptors, published by a rename on the tier), which
// only a directory tier has: the stack asks for a *dir.Tier there.
type Lower interface {
	Tier

	// Dir is the tier's root directory, for messages and control files;
	// Root the filesystem beneath it, held (the tier's files are reached
	// through no link); Links how many symbolic links (or ways out of the
	// root) its operations met and refused.
	Dir() string
	Root() rootfs.FS
	Links() int64
	// Do runs fn, an operation named op on the tier's Root, as the tier
	// runs its own: under its timeout, its outcome kept in its Health.
	Do(op string, fn func() error) error
	// InPlace reports whether reads may use the tier's file itself (a
	// shared file may vanish under an open descriptor: it is copied).
	InPlace() bool
	// RecordOwner records, beside the lock of a private tier, this
	// daemon's pid and FUSE connection; a shared tier has no lock.
	RecordOwner(conn uint32) error

	// Health reports the tier's state; Stalled is the error of an
	// operation that got no answer in time or did not run because the
	// tier is Down; Probes how many health probes the tier ran.
	Health() Health
	Stalled(op string) error
	Probes() int64
	// OnRootLost sets what the tier calls with the keys it loses when its
	// root directory is lost: it returns how many it keeps.
	OnRootLost(keep func([]format.Key) int)

	// Index is the tier's index of its files: what the stack reads
	// residency, sizes and versions from, and checks a copy's source
	// entry against.
	Index() *index.Index
	// Has reports whether the tier holds key, for batch lookups: no
	// syscall while the index knows (call Revalidate first).
	Has(key format.Key) bool
	// Lookup is Stat once key's shard was revalidated: the index only, or
	// for a shared tier the disk for a key it lacks; a miss is false.
	Lookup(key format.Key) (Info, bool)
	// Touch marks key as just used (LRU; on a shared tier, its mtime too).
	Touch(key format.Key)
	// Models returns the models the tier holds files of, sorted; HasModel
	// reports whether it holds model.
	Models() []string
	HasModel(model string) bool

	// CRC returns the payload CRC-32C the tier keeps for key (has is false
	// when it keeps none; ErrNotFound when it does not hold key);
	// HeaderCRC the CRC-32C of the header bytes (format.HeaderCRCXattr);
	// KeepCRC records crc, computed by a read of key's file f that found
	// none kept, for later runs (best effort).
	CRC(key format.Key) (crc uint32, has bool, err error)
	// CRCFrom is CRC read from f, key's file open on the tier.
	CRCFrom(key format.Key, f *os.File) (crc uint32, has bool, err error)
	HeaderCRC(key format.Key) (crc uint32, has bool, err error)
	KeepCRC(key format.Key, f *os.File, crc uint32)
	// Sync makes an already published file and its name durable, for a
	// file committed without Sync; Syncfs syncs the whole filesystem the
	// tier stands on, through its root (a flush). HasFile reports whether
	// the tier has a file of key: the version it indexes, or one a newer
	// version not committed here yet superseded.
	Sync(key format.Key) error
	Syncfs() error
	HasFile(key format.Key) bool
	// Delete is Remove for a user's removal: it answers without waiting
	// for the unlink. RemoveModel removes every file and directory of
	// model.
	Delete(key format.Key) error
	RemoveModel(model string) error

	// OverHigh reports whether use, in bytes or in files, is above the
	// high watermark; OverLow whether it is above the low one (eviction
	// goes on). Oldest returns up to n files, least recently used first;
	// MayEvict whether key may be evicted now (a shared file used by some
	// daemon lately may not).
	OverHigh() bool
	OverLow() bool
	Oldest(n int) []Info
	MayEvict(key format.Key) bool
	// FSNeed returns how many bytes must be freed on the tier, by its
	// index and by its filesystem, before a file of size bytes fits (0:
	// it fits); FSForget drops the tier's estimate of its free space.
	FSNeed(size int64) int64
	FSForget()

	// Supersede takes key's published file out of the index and leaves it
	// on the tier, superseded, for the new version's commit to replace;
	// it reports false when the index does not know key.
	// RestoreSuperseded puts it back as the published version (the new
	// one was not published after all), DropSuperseded removes it (the
	// new version went to another tier).
	Supersede(key format.Key) bool
	RestoreSuperseded(key format.Key) bool
	DropSuperseded(key format.Key) error

	// Shared reports whether other daemons use the tier too. What follows
	// does nothing on a tier that is not shared.
	Shared() bool
	// RenameTreeDir renames the directory from of model's tree to to
	// on a shared tier in one rename(2), and gives the entries of the
	// files moved; AdoptMoved records them under their new keys (rename
	// maps a key to its new one). A private tier does nothing in either.
	RenameTreeDir(model, from, to string) ([]*index.Entry, error)
	AdoptMoved(entries []*index.Entry, rename func(format.Key) format.Key)
	// Revalidate makes the index of key's shard at most a TTL old.
	Revalidate(key format.Key)
	// WatchGone has the tier tell gone the keys it finds removed by
	// another daemon, and replaced the Files it finds replaced by another
	// host.
	WatchGone(gone, replaced func([]format.Key))
	// SupersedeForeign marks the file at key's name, another host's
	// version the tier holds without indexing it, superseded, unless it
	// is newer than ours (published at ours); it reports whether it did,
	// and whether the file there is newer (ours is stale).
	SupersedeForeign(key format.Key, ours time.Time) (superseded, newer bool)
	// Owe records key as owed to the tier (a write-back it missed), Owed
	// lists the keys owed that keep takes (nil: all), IsOwed reports
	// whether one is, Paid forgets one.
	Owe(key format.Key)
	Owed(keep func(format.Key) bool) []format.Key
	IsOwed(key format.Key) bool
	Paid(key format.Key)

	// A files model's tree of directories on the tier (package layout):
	// MarkTree makes model's directory, marked as a tree; MakeTreeDir
	// makes its directory rel; TreeSubdirs lists the subdirectories of
	// dir; NoSubdirs reports whether dir is known to hold none.
	MarkTree(model string) error
	MakeTreeDir(model, rel string) error
	// ForgetTreeDir drops what the tier knows of the directory rel of
	// model's tree and beneath it, which the stack removed or renamed:
	// the next publish there makes its directories, and their names
	// durable, again.
	ForgetTreeDir(model, rel string)
	TreeSubdirs(dir string) []string
	NoSubdirs(model, dir string) bool
	// AdoptTree indexes at once, on a shared tier, the files of model's
	// tree its index does not hold yet; RevalidateTreeDir makes the
	// index's Files of the directory rel follow the share (at most once
	// per TTL), and returns the keys it dropped and whether the directory
	// is gone from the share.
	AdoptTree(model string)
	RevalidateTreeDir(model, rel string) (dropped []format.Key, gone bool)
}
