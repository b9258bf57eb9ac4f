// Package files is the files layout (docs/spec.md §2, docs/semantics.md,
// "The files layout"): a model directory an engine fills as it would a
// local disk, with any tree of names (vLLM's and llm-d's fs tier,
// LMCache, SGLang, Mooncake write a file per block, under a temporary
// name, renamed). Every published regular file is a File
// (format/files.go): raw, tiered, written back, checked by CRC-32C and
// evicted like a block. What is the layout's here:
//
//   - A directory exists when it was made (mkdir, kept in every directory
//     tier, so it outlives a restart), or holds a file (Layout.Tree).
//   - A file a process creates is private to it until it publishes: at
//     the creating process's last close, fsync, or rename. A staging name
//     (Staging: `*.tmp`, `*.tmp.*`, rsync's `.<name>.XXXXXX`) is a
//     temporary file: it publishes only at its rename, under the name it
//     is renamed to, so the temporary name itself never reaches a tier.
//   - Publishing under a name that is published replaces the file
//     (Replaces; the engines' rename over, or a create with O_TRUNC):
//     readers that have the old one open keep its bytes.
//   - rename of a published file moves it; rename of a directory moves
//     each file beneath it (store.Store.MoveFilesDir), up to bounds past
//     which it is EXDEV: tools (mv) copy instead.
//   - an engine's own files (Kept: '.' names, configs, locks, logs) are
//     never evicted.
//   - a router knows a file by the digest its name holds, where it is
//     "<hex digest>.bin" (EngineHash).
package files
