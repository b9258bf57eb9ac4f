// Package dir is a directory tier: a plain directory (kind nvme, nfs or
// ds3fs) in the <model>/<hh>/<id>.bin layout, a persistent level of the
// tiers' stack below the memory tier.
//
// Decided here (docs/design.md, "Directory tiers", "Shared tiers"):
//   - every path beneath the tier's root goes through package
//     tiers/rootfs, no link followed; files are published by a
//     no-replace rename of a temp file beside the final name
//     (publish.go), their CRC-32C kept in an xattr or a sum file
//     (sums.go);
//   - the kind sets the defaults (Config): O_DIRECT, fsync at commit, the
//     operation timeout past which the tier is Down and fails fast
//     (health.go, watch.go), the watermarks of eviction;
//   - who else uses the directory is one interface, dirSharing
//     (sharing.go): a private tier locks its directory and trusts its
//     index, rebuilt at start from the snapshot of its last clean close
//     (rebuild.go, snapshot.go); a shared one revalidates its index per
//     shard within a TTL, evicts by the mtime every daemon moves, and
//     removes only stale temp files (shared*.go);
//   - a tier whose directory goes is Down and comes back when the path is
//     a directory again (root.go); files staged for O_DIRECT writers are
//     StagedFiles (staged.go, direct.go);
//   - Fsck walks a tier directory offline with the same walk of the
//     layout as the rebuild (layout.go, fsck.go), so what it calls good is
//     what a daemon adopts.
//
// The stack (package tiers) uses a tier through its exported methods
// only: the Lower interface of package tiers/tier, which the Tier
// implements (stack.go and the others), and for files staged on disk
// CreateStaged and Link;
// hooks.go holds what only the stack's tests call.
package dir
