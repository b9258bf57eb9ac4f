// Package crashfs is a filesystem under the tiers that can fail and lose
// power: a rootfs.FS over a real scratch directory (the tiers keep their
// real descriptors: pwrite, O_DIRECT, fsetxattr, passthrough) that
//
//   - injects an error, a stall or a power cut before any chosen
//     operation (Disk.SetFault; FailAt, CutAt), and
//   - simulates a power cut strictly (Disk.PowerCut, then Restore): the
//     directory is rewound to what the fsyncs a POSIX filesystem needs
//     made durable, and everything else is forgotten. A file's bytes,
//     mode, times and xattrs are durable as of its last SyncFile (fsync
//     of the file); a name in a directory as of that directory's last
//     SyncDir; everything at a Syncfs (and at New). A name made durable
//     whose file's bytes never were comes back empty, or, with Torn, as a
//     prefix of what was written: what ext4's delayed allocation leaves.
//     Its xattrs are the latest (metadata, journaled with the names).
//     A directory's sync is atomic with a rename, as on a real
//     filesystem: it records the names before the rename or after it,
//     each with its own file's xattrs.
//
// The durable state is recorded, not guessed: at each sync the file's
// bytes are copied into a shadow directory outside the root, keyed by
// the file's identity (inode and birth time, so a reused inode is
// another file), and a directory's entries are listed with the identity
// of each. Restore empties the root and makes again, from the root's
// durable entries down, every directory and file (a file at two durable
// names is made again as two links of one file).
//
// Wrap puts the same hook before the operations of any rootfs.FS,
// without a Disk (no durable record, no power cut): a test stands a tier
// on it to fail, stall or act between two of the tier's operations (the
// memory tier's private directory: mem.Config.WrapFS; a directory tier's
// real Root: OpenWrapped, for dir.Config.OpenFS). Gate is such a hook
// that holds the operations a test names until it opens; Faults one
// whose fault (an errno, a delay, a stall) a test sets and clears while
// the tier runs, and that counts the operations by name. Neither sees
// the bytes written through a descriptor (pwrite): a write(2) that fails
// needs a real filesystem under the descriptor (internal/faultfs).
//
// A Disk outlives the filesystems opened on it (Open, the tier's
// DirConfig.OpenFS), as a disk outlives the daemons that mount it: a
// restart closes the stack and opens another over the same Disk, a
// power cut restores it between the two.
package crashfs
