// Package integration tests the real ucmfs binary: TestMain builds it once,
// each test mounts it in a subprocess on a temporary mount point (with a
// temporary tier directory and a small memory tier), waits until
// MNT/.ucm/stats reads, and drives the mount from other processes: the
// Python client (package ucmfs in python/, run as `python3 -m ucmfs`;
// its own unit tests run against a mount too), shell tools (ls, du, stat, getfattr, rm, cp,
// tar) and plain Go file operations.
//
// Mount tests skip when /dev/fuse cannot be opened, unless the environment
// sets UCMFS_REQUIRE_FUSE=1 (as .ci/run does): then they fail. No test
// leaves a mount behind: every daemon is stopped in t.Cleanup and a mount
// still present is detached; TestMain reports any mount left under its
// temporary directory.
package integration
