// Package vfs is the kernel-agnostic half of the mount: what package fs
// (the FUSE adapter) decides about the tree it presents that has nothing
// to do with go-fuse. fs calls it and translates its errors; it knows no
// kernel request, no node of go-fuse and no errno.
//
// It holds the mount's own bookkeeping above the store:
//
//   - the options of a mount and their defaults (options.go; package fs
//     names them fs.Options);
//   - what a setattr lets change: a directory's times only, a model's
//     owner and mode by its owner or root, a file being written's size
//     and mtime (setattr.go, over a plain SetAttr);
//   - statfs's figures of the store's space, and the fsync of a
//     directory's entries (space.go);
//   - which file being written a request on its node is about, what
//     its open starts, how it shows and what its close answers, and
//     the truncate of a published File, a new version (drafts.go);
//   - which version of a published file a node serves, whether a newer
//     one replaced it, what its open descriptors read, and what a
//     setattr may change of it (files_versions.go);
//   - the per-user budgets of what users hold open: listings of open
//     directories, charged without their dots, and open handles
//     (user_budget.go), the private entries
//     of ucm-posix models, charged by their paths in the scratch
//     directory (scratch_budget.go);
//   - the order a shard lists its files in (shard_order.go);
//   - the new versions of Files waiting for their open's retry
//     (reopen.go);
//   - the descriptor a published file's opens share (opened.go) and
//     those kept after their last close (opencache.go), and what is kept about Files' nodes beyond their
//     keys: generations, moves, nodes off go-fuse's tree (files_nodes.go),
//     both over the adapter's own node type, which they see through a
//     small interface or a type parameter;
//   - the directory moves of files models in flight, which requests
//     beneath their paths wait for, and where a move takes a file
//     (dir_moves.go);
//   - the flock(2) locks the daemon keeps by name (flock.go);
//   - what a directory of a files model lists, and how many shard
//     directories a model shows (files_list.go), the listing an open
//     directory holds, read by offset (dir_listing.go), and the hidden
//     names of O_TMPFILE files (tmpfile.go);
//   - the rules of the user.ucm.* attributes' names, values and answer
//     buffers, and the requests answered by them (xattr.go);
//   - the rules of a files model's names, which file being written a
//     caller sees, the removal of published files, a derivable
//     sidecar's derivation and whether a File replaced an earlier
//     version (files.go); what a lookup, a create, an rmdir, an unlink
//     and a rename of a file mean there (files_requests.go);
//   - the lookup, making and removal of a model at the root
//     (models.go);
//   - the errors of the requests' decisions, and the plain refusals
//     (a miss, a name that exists) the adapter answers with no warning
//     (answers.go);
//   - the directories whose listing the kernel may cache, those it
//     was let cache, by the node that registered them, which may be
//     cached when opened, the times of their last changes, their
//     mtimes, and a files model's directories' numbers (listing.go,
//     cached_listings.go);
//   - a shard directory's names, what it lists, the shard directories a
//     ucm-posix model shows, and the one lookup of a
//     published name (shard.go: LookupKey), which the adapter's shard
//     and files nodes and its light layer all answer from; the staging
//     file a lookup in a shard finds, a rename's target there and an
//     unlink, and a mkdir and an rmdir of a shard directory at a
//     model's root (shard_requests.go).
//
// Decided: it is a package of its own beside store, not a part of store,
// and it uses store's exported API only. The store is the core every
// front end shares (fs, control, metrics); what is here belongs to one
// mount and its users (what they hold open, what the kernel was told), and
// is made and dropped with the mount. It names inode numbers through
// fs/ino, which imports no go-fuse either.
package vfs
