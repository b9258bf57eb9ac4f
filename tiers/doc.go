// Package tiers stores block files in a hierarchy of tiers and moves them
// between those tiers.
//
// A Tier is one level: the memory tier (MemTier, each block a file in a
// private RAM-backed directory) or a directory tier (DirTier, kind nvme, nfs
// or ds3fs: a plain directory in the <model>/<hh>/<id>.bin layout). Every
// tier is file-backed, so the mount can hand the kernel a file descriptor
// of whichever tier holds a block (FUSE passthrough).
//
// The Stack puts the tiers together and is the way in for the rest of the
// daemon: New builds it from the tiers' configurations; writes land dirty
// in memory, a bounded pool writes them back to the first persistent tier
// (paced like the kernel's dirty pages: an expiry age, a background
// threshold and a limit at which writers wait; StackConfig), reads fall
// through to lower tiers and promote, and CRC-32C is checked on
// every copy between tiers. Results say which tier they came from (a
// TierID: Memory, then the directory tiers in order); Tiers describes
// them; pins and mappings for the GPU path are Stack methods too.
//
// Fsck checks a tier directory offline with the same walk of the layout
// that a directory tier's index rebuild uses.
//
// Files by concept: stack.go (construction, lifecycle, lock order),
// stack_publish.go (the write path to the memory tier), stack_dirty.go (the
// write-back queue, its workers and their pacing), stack_writeback.go,
// stack_copy.go (CRC-checked copies between tiers), stack_open.go and
// stack_lookup.go (reads, stat, CRC), stack_demote.go (demotion, removal),
// stack_pins.go, stack_tiers.go, stack_stats.go; mem*.go the memory tier;
// dir*.go a directory tier; files.go what both publish with; layout.go
// and fsck.go the on-disk layout; index*.go the in-memory index; lock.go
// the tier lock; shared*.go what a tier other daemons share (nfs, ds3fs)
// does: its index revalidated, reads copied off it, eviction by mtime,
// crash leftovers. docs/design.md explains the decisions.
package tiers
