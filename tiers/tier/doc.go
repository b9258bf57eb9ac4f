// Package tier is what every tier of block storage is and shares, below
// the tiers themselves: the contract (Tier, Writer, Info, Usage,
// CommitOptions, the errors; Lower and Health, what the stack asks of a
// tier below memory, a directory tier or any other) and the pieces both the memory tier and a
// directory tier are built with.
//
// Decided here:
//   - a tier is file-backed and its files immutable once published:
//     written through a Writer into a temp file (TmpPrefix, RandomSuffix)
//     and published under the key's name by Commit, or not at all;
//   - a key is checked before it names a path (CheckKey), so no key names
//     one outside the tier; filesystem errors are wrapped once (OSErr,
//     NotFound) so that ENOSPC reads as ErrFull and ENOENT as ErrNotFound;
//   - a tier's index entries are the index package's, built and read as
//     Info here (entries.go); its bounds (MaxFiles, NoRoom) are the same
//     for both kinds;
//   - the lock file (lock.go) keeps two daemons off one directory; the
//     tree mark (tree.go) tells a files model's tree from shards.
//
// Package tiers re-exports the contract under its own names for the rest
// of the daemon.
package tier
