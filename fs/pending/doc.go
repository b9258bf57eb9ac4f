// Package pending serves the files being written, as the kernel sees
// them: a file being written is a Node, seen by its writers, and each
// open descriptor of it a Handle. The rules (who publishes a file and
// when, staging names, renames) are the store's (store.Draft,
// store/writes.go) and package vfs's (vfs/drafts.go); here are the
// go-fuse node and file handle that serve them.
//
// Decided: a node kind of its own beside the adapter, as the control
// directory (fs/ucmdir) and the private entries (fs/scratch) are, with
// the adapter as its Host: its errno translation, its log, the caller,
// the attributes of a file being written, and the notifications that
// drop the kernel's entry of a name a close published over. Errno
// values are the adapter's: the plain answers come in Errnos, the rest
// through Host.Fail and Host.Errno.
package pending
