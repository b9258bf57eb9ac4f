// Package store is the kernel-agnostic core of ucmfs: the block store of
// one mount, between the tiers.Stack below and the front ends above (the
// FUSE adapter in package fs, the control protocol in package control).
//
// It owns the rules every front end shares:
//
//   - models: the registry of model directories (models.go), their usage
//     and quotas (the Models part);
//   - publishing: a Draft becomes a block or a sidecar under the size
//     limit, the sidecar check and the quota (publish.go), then
//     tiers.Stack.Publish validates and stores it (the Writes part);
//   - sidecars: the per-model kind (repr_setting.go), derivation from the
//     block and its cache (repr_derive.go, repr_cache.go), the gathering of
//     topk candidates (topk_gather.go) (the Sidecars part);
//   - GPU loads: pins that keep a block in memory while it is copied, and
//     removals that wait for them (pins.go);
//   - the promotion pool behind prefetch (prefetch.go) and flush to
//     durability (sync.go);
//   - the counters of .ucm/stats and the metrics (counters.go), and the
//     latency observers the metrics install (latency.go).
//
// # Parts
//
// A caller holds the *Store and asks it for the part its request is
// about (parts.go): Writes (a file being written, a Draft, from its create
// to its publish or discard: one name here for what the front end shows
// as a node and its handles), Models (the registry, layouts, settings,
// owners, users and quotas) and Sidecars (the kind, derivation, topk
// candidates). What the store itself still answers is what belongs to no
// one part or to all of them: pins, prefetch, flush, a files model's
// directories, events, counters and the stack (Tiers: a published file
// read, stated or removed passes no rule of the store's, so callers call
// the stack for it instead of a method here that only passed the call
// on).
//
// The parts are types of this package, not packages of their own: they
// share one lock order (Store), one settings table that all three read,
// and each other's rules (a publish asks the model's quota and the
// sidecar check; a write starts by the model's layout; a model's removal
// waits for the pins of GPU loads and forgets the directory tree), so
// split into packages each would need the others' unexported state
// exported or passed in by hand. A part is the store seen for one
// job: a value holding the store, so taking one costs nothing.
//
// It returns Go errors and sentinels only (errors.go, and those of tiers,
// format and gpu): it imports neither go-fuse nor errno constants, so its
// tests run without a kernel.
package store
