// Package filesdir serves the directories of files models (layout
// files: any tree of names, tmp + rename publish), as the kernel sees
// them: every directory below a model's root is a Dir, and the root's
// requests (the model's node is package fs's) and the Dir's go through
// Ops: lookups, listings and the cached ones, mkdir and rmdir, creates
// and O_TMPFILE, unlink, renames of files and directory moves, fsync and
// the directory pin. The rules (a name's meaning, what a move or an
// unlink does, what a listing holds) are the store's and package vfs's;
// here are the go-fuse nodes and directory handles that serve them.
//
// Decided: a node kind of its own beside the adapter, as the files being
// written (fs/pending) are, with the adapter as its Host: its errno
// translation, its log, the caller, the attributes, the nodes of
// published files (seen here as a File, whose version a move follows)
// and the notifications that drop the kernel's entries. Errno values are
// the adapter's: the plain answers come in Errnos, the rest through
// Host.Fail and Host.Refuse.
package filesdir
