// Package scratch serves the private entries of ucm-posix models: the
// names starting with '.' at a model's root that UCM's PosixStore keeps
// beside its shard directories (its GC lease, heartbeats, small configs).
// They are plain files and directories of a scratch directory in the
// memory tier, served by go-fuse's loopback nodes (node.go), made and
// listed for the model's node (dir.go), with what they take of the tmpfs
// bounded per user (vfs.ScratchBudget).
//
// Decided: they are a package of their own beside the adapter, which
// hands them the requests on such names of a ucm-posix model's directory
// and is their Host (its errno translation, its log, the caller). Errno
// values are the adapter's: the plain answers come in Errnos, the rest
// through Host.Fail and Host.Errno.
package scratch
