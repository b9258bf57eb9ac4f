package vfs

import (
	"context"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// What statfs and fsyncdir ask of the store as a whole: its space in
// statfs's units, and a directory's entries made durable.

// StatfsBlock is the block size statfs counts in.
const StatfsBlock = 4096

// Statfs is what statfs reports of the store: the tiers' capacity and
// use in StatfsBlock blocks, and the files they hold of the most they may
// hold.
type Statfs struct {
	Blocks, Bfree uint64
	Files, Ffree  uint64
}

// StatfsOf counts sp in statfs's units.
func StatfsOf(sp store.Space) Statfs {
	capacity, used, files := sp.Capacity, sp.Used, sp.Files
	const bs = StatfsBlock
	free := max(capacity-used, 0)
	out := Statfs{Blocks: uint64((capacity + bs - 1) / bs), Bfree: uint64(free / bs)}
	// Inodes: the most files the tiers hold (summed as the bytes are),
	// of which the published files are used, so df -i shows IUsed = the
	// files (each once) and IFree the room left for more.
	out.Files = uint64(max(sp.MaxFiles, files))
	out.Ffree = out.Files - uint64(files)
	return out
}

// SyncDir makes the entries of a directory of model durable, whose
// entries are the published files keys lists (nil: none; the root, a ucmb
// model, .ucm): a file's name is on a persistent tier only with its
// bytes, so its entry is durable once the file is. Those in memory only
// are written back, then every directory tier is synced, as a flush of
// them would (store.FlushKeys). The files are listed only when the model
// has some in memory only (a listing of a directory of 20 000 files took
// 40 ms). Like a flush it completes across interrupts: its work is
// bounded by the tiers' timeouts.
func SyncDir(ctx context.Context, st *store.Store, model string, keys func() []format.Key) error {
	var listed []format.Key
	if keys != nil && st.Tiers().ModelDirty(model) {
		listed = keys()
	}
	return st.FlushKeys(context.WithoutCancel(ctx), listed)
}
