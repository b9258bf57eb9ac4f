// Package mem is the memory tier: each block a file in a private
// RAM-backed directory, the fastest level of the tiers' stack, whose
// files go with the daemon.
//
// Decided here (docs/design.md, "Memory tier"):
//   - where the files live: as root, a tmpfs of the tier's own with
//     transparent huge pages, detached at once, which the kernel frees
//     when the daemon exits; elsewhere a private directory on a
//     RAM-backed filesystem (/dev/shm), flocked, the directories of dead
//     daemons removed at start (dir.go, private.go). A directory of files,
//     not a memfd a block: a tmpfs file needs no open descriptor;
//   - new files are dirty until the stack has written them back
//     (SetDirty); dirty and pinned files are never evicted, and the
//     capacity is charged in whole pages;
//   - at commit a file is mapped read-only while a mapping budget allows,
//     its pages locked in RAM where that keeps them there, and registered
//     for GPU DMA when a HostRegistrar is set (pages.go, lockq.go);
//   - a removed file leaves the index at once; its tmpfs file, mapping and
//     registration are released behind, by a worker (late.go).
//
// The stack (package tiers) uses the tier through its exported methods
// only: the Tier interface of package tiers/tier and what stack.go lists.
//
// Files: mem.go (lifecycle), files.go (its published files), writer.go,
// pages.go and lockq.go, dir.go and private.go, late.go, stack.go.
package mem
