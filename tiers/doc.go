// Package tiers stores block files in a hierarchy of tiers and moves them
// between those tiers.
//
// A Tier is one level: the memory tier (package tiers/mem, each block a
// file in a private RAM-backed directory) or a directory tier (package
// tiers/dir, kind nvme, nfs or ds3fs: a plain directory in the
// <model>/<hh>/<id>.bin layout). Every tier is file-backed, so the mount
// can hand the kernel a file descriptor of whichever tier holds a block
// (FUSE passthrough). Both are built on package tiers/tier, the contract.
//
// The Stack puts the tiers together, through their exported methods only
// (the directory tiers through tier.Lower, what the stack asks of a tier
// below memory, but for files staged on disk and links, which only a
// directory tier makes), and is the way in for the rest of the daemon: New builds it from the
// tiers' configurations; writes land dirty in memory, a bounded pool
// writes them back to the first persistent tier (paced like the kernel's
// dirty pages: an expiry age, a background
// threshold and a limit at which writers wait; StackConfig), reads fall
// through to lower tiers and promote, and CRC-32C is checked on
// every copy between tiers. Results say which tier they came from (a
// TierID: Memory, then the directory tiers in order); Tiers describes
// them; pins and mappings for the GPU path are Stack methods too.
//
// Fsck (tiers/dir's) checks a tier directory offline with the same walk
// of the layout that a directory tier's index rebuild uses.
//
// Files by concept, so the folder shows the parts:
//   - the stack: stack.go (construction, lifecycle, lock order),
//     stack_publish.go (the write path to the memory tier), stack_disk.go
//     (O_DIRECT files staged and published on the nvme tier), stack_open.go
//     and stack_lookup.go (reads, stat, CRC), stack_reuse.go (kept
//     descriptors), stack_pins.go, stack_tiers.go, stack_stats.go,
//     stack_times.go, stack_verify.go, stack_shared.go (what the stack
//     does for a shared tier);
//   - moving files between tiers: move_dirty.go (the write-back queue,
//     its workers and their pacing), move_writeback.go, move_copy.go
//     (CRC-checked copies), move_promote.go, move_demote.go (demotion,
//     removal), move_errors.go, move_shared.go (write-back to a shared
//     tier first), move_owed.go (what a host owes a shared tier);
//   - the memory tier: package tiers/mem (stack_memfull.go is the
//     stack's answer when it is full);
//   - a directory tier: package tiers/dir (stack_shared.go, move_shared.go
//     and move_owed.go are what the stack does for a shared one);
//   - what every tier shares: package tiers/tier (the Tier interface,
//     Info, Usage, the errors, temp names and key checks, index entries
//     as Info, the tier lock, the tree mark), whose names tier.go
//     re-exports, as dirs.go does tiers/dir's; model_meta.go (the
//     models' settings records);
//   - the in-memory index of a tier: package tiers/index, behind its
//     exported methods.
//
// docs/design.md explains the decisions.
package tiers
