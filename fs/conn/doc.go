// Package conn is a mount's FUSE connection: which transport carries its
// requests (FUSE over io_uring, package fs/uring, or go-fuse's /dev/fuse
// loop), the mount(2) that opens it, and its wait and unmount. Package fs
// hands it the raw file system to serve (the light layer over go-fuse's
// bridge) and the mount options; it knows no node and no store.
//
// Decided: the transport is chosen once, at mount (Connect): io_uring
// where the kernel offers it, else /dev/fuse with one log line saying
// why, unless one was asked for by name (then its absence fails the
// mount). Whether a path is a mount point is read from the mount table
// (IsMountpoint).
package conn
