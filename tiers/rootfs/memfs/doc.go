// Package memfs is a filesystem under the tiers held in memory alone: a
// rootfs.FS with no directory on any disk, for tests (the third
// implementation of rootfs.FS, beside the real rootfs.Root and the
// crash-simulating crashfs.FS).
//
// Its names are a tree of directories kept by the Disk; each regular
// file is a real descriptor with no disk behind it, a memfd_create(2)
// file (tmpfs pages of the process). The tiers move data through the
// *os.File an open returns (pwrite, fsetxattr, the memory tier's mmap, a
// FUSE passthrough descriptor handed to the kernel), so an open returns
// a new open file of that memfd (its /proc/self/fd entry opened again
// with the flags asked: its own offset and status flags, as an open(2)
// of a name gives; never a dup, whose offset and O_DIRECT toggles the
// tiers' writers would share). A file unlinked while open stays readable
// through its descriptors, as on a disk.
//
// What the kernel decides of a file, it decides here too:
//
//   - O_DIRECT is passed on: tmpfs takes it since Linux 6.6 (a memfd
//     opened again through /proc is a tmpfs file); an older kernel
//     refuses it with EINVAL at the open or at fcntl, as a filesystem
//     without O_DIRECT does, and the directory tier then writes buffered
//     with one warning (package tiers: CreateOnDisk, flushDirect).
//   - Extended attributes are the memfd's own (fsetxattr on any of its
//     descriptors, Getxattr here): tmpfs keeps user xattrs since Linux
//     6.6; before, ENOTSUP, and the tiers keep CRCs in sum files.
//   - A file's mode, size, times and inode number are the memfd's fstat:
//     Stat of a name and fstat of a descriptor agree on st_dev and st_ino
//     (the tiers compare them, and find flock holders in /proc/locks by
//     them). Stat's st_nlink is the count of names; fstat of a descriptor
//     says 0 (a memfd has no name the kernel knows).
//
// What memory cannot give, and what memfs does instead:
//
//   - A directory has no descriptor: opening one is EISDIR, read-only and
//     O_PATH included (the real Root opens them), and O_TMPFILE is
//     EOPNOTSUPP (as on a filesystem without it). The tiers do neither.
//   - FD is -1: the tiers' two uses of the root's descriptor, fstatfs
//     (does the filesystem count subdirectories in a directory's link
//     count?) and fstat (is the filesystem's client dead, ENOTCONN?),
//     answer EBADF, which each takes as "no" (the tier lists a directory
//     rather than trust its link count; no remount). Stat of a directory
//     gives 2 plus its subdirectories anyway, as tmpfs does.
//   - The capacity given to New is what Statfs reports, f_bavail what
//     the files with a name do not use; a write past it is not refused
//     (a memfd grows as long as memory lasts): ENOSPC is crashfs's.
//   - A file unlinked while still open is no longer counted by Statfs.
//   - Names: files and directories only; no symbolic link is ever made
//     (ELOOP never happens); RENAME_WHITEOUT is EINVAL.
//   - A file's ctime does not move when a name of it is made or removed.
//   - A directory's mode is kept but not enforced: any caller may add
//     and remove names in any directory (as root may on a disk; the
//     tests run as root). A file's mode is the kernel's to enforce.
//   - Every sync succeeds at once (SyncFile fsyncs the memfd, which
//     tmpfs does not wait for): memory is all there is, and a Disk is
//     never Gone.
//
// A Disk outlives the filesystems opened on it (Open, the signature of
// tiers.DirConfig.OpenFS), as a disk outlives the daemons that mount it:
// a restart closes the stack and opens another over the same Disk.
// Disk.Close frees its memory.
package memfs
