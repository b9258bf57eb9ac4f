// Package fs is the FUSE adapter of ucmfs. It presents a store.Store
// (models, publish rules, sidecars, counters: the kernel-agnostic core)
// as a tree of files: each request calls the core (store, and package
// vfs, the adapter's kernel-agnostic half: the mount's options, the one
// lookup of a published name, listings and the cached ones, budgets,
// directory moves, flock locks, the kept descriptors, what a setattr may
// change, the life of a file being written) and turns its error into an
// errno in one place
// (errno.go). go-fuse is imported here, by its subpackages fs/light (the
// raw-protocol layer), fs/uring (FUSE over io_uring), fs/conn and the
// node kinds below, and by the test support internal/faultfs, and
// nowhere else (internal/lint holds it):
//
//	<mnt>/                       root: one directory per model, and .ucm/
//	<mnt>/.ucm/stats             JSON snapshot of the stack's and the mount's counters
//	<mnt>/.ucm/lookup            batch existence and prefix match
//	<mnt>/.ucm/prefetch          promotion into memory
//	<mnt>/.ucm/flush             write-back until durable
//	<mnt>/.ucm/gpu               loads into and dumps from GPU memory, when
//	                             the store has a GPU device
//	<mnt>/.ucm/topk              top-k of candidate blocks by their sidecars
//	<mnt>/<model>/               a model; always shows the 256 shards
//	<mnt>/<model>/<hh>/          a shard directory 00..ff
//	<mnt>/<model>/<hh>/<id>.bin  a published block (0444, immutable)
//	<mnt>/<model>/<hh>/<id>.repr its sidecar: stored, or derived from the
//	                             block on first read (repr_node.go; store)
//
// One node type per kind of file (root.go, model.go, shard.go, file.go,
// repr_node.go) shares the mount's state by pointer
// (state.go); a model directory's requests go to the type of its layout
// (model_layouts.go), chosen when its node is made, so no node method
// asks which layout it serves. Mount (mount.go) is the entry point the
// command line uses, with Options (vfs.Options under the adapter's name); the FUSE connection it opens, on the transport
// chosen, is package fs/conn's. Five families of nodes are packages of
// their own, with the adapter as their host (its errnos, its log, its
// attributes): .ucm/ (package fs/ucmdir), the private entries of
// ucm-posix models (package fs/scratch), the files being written
// (package fs/pending: a file's node and its descriptors; writing.go
// starts them), the directories of files models (package fs/filesdir;
// files.go is its host), and the light layer below.
// Between the kernel and go-fuse's bridge a thin layer (package fs/light)
// answers listings and lookups of published files in shard directories
// from the index with light nodes, which get a go-fuse node only when
// used for more than their attributes (both answer by vfs.Shard, as the
// shard's go-fuse node does); it also carries the passthrough
// backing ids and the bound on kernel nodes. Every node's inode number
// comes from its name (package fs/ino).
//
// # Control plane
//
// Each open descriptor of a request file under .ucm/ is a
// control.Session (package control: the line protocol, bytes in and
// out); package fs/ucmdir only moves the kernel's reads and writes to it
// and passes on the caller. .ucm/stats is the store's snapshot as JSON, the
// same one package metrics exports; docs/control.md is the user's
// reference.
//
// # Writing
//
// A create starts a store.Draft: a private file in the memory tier,
// behind a node with a number of its own that no lookup reaches, so no
// other process sees the file and two writers of one id never share a
// node. The first close (FLUSH) or fsync validates and publishes it, and
// its errno is the verdict close returns; RELEASE only cleans up.
//
// # Reading
//
// All opens of a published file share one descriptor of the tier file
// that holds it (the kernel keeps one passthrough backing file per inode),
// registered as a backing file by the daemon itself and kept, with its
// backing id, for a second after the last close while it still reads the
// block's current file (vfs/opencache.go, light.Backing).
// With FUSE passthrough the kernel reads and writes the tier files itself
// and the daemon sees no I/O; without it the daemon serves each request
// with one pread or pwrite on the same files (direct I/O, 1 MiB requests).
// Passthrough is checked once at mount for every tier and is then used
// for every file or for none: an inode cannot be open in passthrough and
// in normal mode at once.
//
// # Sidecars
//
// A sidecar is stored (written by its engine, validated against its block
// at close) or derivable: a block without one, of a layout package sparse
// can derive from, in a model whose repr_kind (store.ReprSetting, per
// model or store.Options.Repr) is not none. Lookup sizes a derivable
// sidecar from the block's header alone; the first open derives and
// stores it through the store, so from then on it is an ordinary stored
// file (store.Sidecars.Derive, repr_node.go). .ucm/topk gathers the
// candidates' sidecars the same way, through the store's byte-bounded
// cache.
//
// # Caching
//
// Published files are immutable, so their entries and attributes are
// cached for Options.EntryTTL (1h). Misses are cached for
// Options.NegativeTTL (1s), so that blocks another daemon publishes on a
// shared tier appear, except while this mount writes the name. A block
// found gone at open (evicted) has its cached entry dropped at once.
//
// # Errors
//
// Below this package there are only Go errors and sentinels. They become
// an errno in one place (errno.go, which also names the plain answers
// such as a lookup's ENOENT), and every refused request logs one line
// (fsState.fail; a plain refusal of vfs, such as a miss, at debug level:
// fsState.refuse); internal/lint keeps errno constants out of every
// other file but the mount-time checks of mount.go.
// docs/semantics.md and docs/xattrs.md describe what users see.
package fs
