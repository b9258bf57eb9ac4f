// Package rootfs is the filesystem beneath a tier's root: every path
// operation of the tiers (open, create, mkdir, rename, link, unlink,
// rmdir, stat, utimes, xattrs, readdir, statfs) is taken relative to a
// descriptor of the tier's root directory held open for the tier's life,
// and resolved beneath it with no symbolic link anywhere in the path.
//
// Why: a tier directory may be written by others (a shared tier on NFS or
// 3FS is written by every host of the cluster, and by anyone the share
// lets in), and the daemon runs as root. A path joined from the tier's
// root and resolved by the kernel as usual follows a link that one of
// them planted (<share>/model/x -> /etc/cron.d), and every create,
// overwrite, rename, unlink or mkdir of the daemon's then lands outside
// the tier with root's rights. Here each intermediate directory is
// resolved with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_MAGICLINKS) from the root's descriptor, and the last
// component is acted on with the *at system call that does not follow
// it (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW, unlinkat, renameat2, mkdirat,
// linkat without AT_SYMLINK_FOLLOW). A link met on the way fails the
// operation with ELOOP, is never listed by ReadDir, and is reported to
// the Root's OnLink (the tier logs it once and counts it).
//
// A path given to a Root is relative ("model/ab/id.bin", "." for the root
// itself), slash-separated, with no empty, "." or ".." component: such a
// path is refused with EXDEV before any system call, as openat2 would
// refuse a way out of the root.
//
// The root's own path (what the administrator configured) is resolved as
// usual, once, when the Root is opened: it is the administrator's choice,
// links included. Only what is beneath it is guarded.
//
// Only Linux 5.6 or later has openat2; the tiers need it (ucmfs needs
// a newer kernel anyway, for FUSE passthrough).
package rootfs
