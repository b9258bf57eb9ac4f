// Package hybrid computes the prefix-cache hit of a hybrid model, one
// whose layers fall into KV-cache groups of different kinds (full
// attention, sliding window, chunked local attention, Mamba), as vLLM's
// hybrid KV-cache manager accepts it: given, for every group, its kind,
// its block size and the block ids of one prompt, and a way to tell
// whether a block is stored, HitLength answers how many tokens of the
// prompt need no recomputation, and Needed which blocks of each group
// must then be loaded.
//
// Each group is its own model directory, <model>.g<gid>, whose kind the
// model xattr user.ucm.group records as Spec.String writes it ("full",
// "swa:<W>", "chunk:<C>", "mamba"); docs/hybrid.md describes the layout,
// the algorithm and the lookup request built on this package.
//
// It imports only package format.
package hybrid
