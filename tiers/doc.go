// Package tiers stores block files in a hierarchy of tiers and moves them
// between those tiers.
//
// A Tier is one level: the memory tier (MemTier, each block a file in a
// private RAM-backed directory) or a directory tier (DirTier, kind nvme, nfs
// or ds3fs: a plain directory in the <model>/<hh>/<id>.bin layout). Every
// tier is file-backed, so the mount can hand the kernel a file descriptor
// of whichever tier holds a block (FUSE passthrough).
//
// The Stack puts the tiers together: writes land dirty in memory, a bounded
// pool writes them back to the first persistent tier, reads fall through to
// lower tiers and promote, and CRC-32C is checked on every copy between
// tiers. docs/design.md explains the decisions.
package tiers
