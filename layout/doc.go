// Package layout is what a layout of a model directory is: the Layout
// interface, which owns everything a layout decides (its names and their
// parsing, a path to a key and back, shard directories, staging names,
// what publishing over a name does, whether files are headerless, what a
// directory is and what moving one means, the hash a router knows a file
// by). The layouts themselves are one package each (layout/ucmb,
// layout/posix, layout/files), and layout/registry is the one table of
// them: the only places that name a layout. Everything else asks a
// model's Layout value (store.Models.LayoutOf) or a key's
// (registry.Of), never which one it is.
//
// The bytes of a UCMB block and the Key stay in package format (the tiers
// name their files by format.Key.Path); the layouts use it.
//
// # Adding a fourth layout
//
// A fourth layout touches, today:
//
//   - layout/<name>/: a package with a value satisfying Layout (doc.go,
//     its rules, its tests);
//   - layout/registry/registry.go: one line of the table (and its test,
//     registry_test.go, which lists the names);
//   - internal/lint/imports_test.go and docs/design.md: the package's
//     imports and its line in the package map;
//   - cmd/ucmfs/layout.go: the --default-layout flag's help, which lists
//     the layouts in words; docs/spec.md §2, the contract;
//   - format, only when none of the kinds fits its keys: a Kind (format/id.go:
//     Kind.Ext, Key.FileName, Key.ShardDir, Key.Path name a kind's files
//     for the tiers);
//   - fs/model.go (modelLayouts) and a node type, only when its
//     directories have a shape (Dirs) none of the three has; and
//     vfs/shard.go (HexShard, MadeShard), when it shares a shape of shard
//     directories with another layout: a shard then takes the one layout
//     of its shape, so it would have to be given the model's;
//   - tiers, only when its keys are of a new Kind: the walk of a model
//     directory (tiers/dir/layout.go, tiers/dir/layout_tree.go) parses
//     the names a tier holds by format's kinds. The stack and the tiers
//     otherwise ask a key's layout (registry.Of) what it replaces, whether
//     it is a tree's file, a sidecar and whose.
package layout
