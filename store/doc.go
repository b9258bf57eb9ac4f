// Package store is the kernel-agnostic core of ucmfs: the block store of
// one mount, between the tiers.Stack below and the front ends above (the
// FUSE adapter in package fs, the control protocol in package control).
//
// It owns the rules every front end shares:
//
//   - models: the registry of model directories (models.go), their usage
//     and quotas;
//   - publishing: a pending write becomes a block or a sidecar under the
//     size limit, the sidecar check and the quota (publish.go), then
//     tiers.Stack.Publish validates and stores it;
//   - sidecars: the per-model kind (repr_setting.go), derivation from the
//     block and its cache (repr_derive.go, repr_cache.go), the gathering of
//     topk candidates (topk_gather.go);
//   - GPU loads: pins that keep a block in memory while it is copied, and
//     removals that wait for them (pins.go);
//   - the promotion pool behind prefetch (prefetch.go) and flush to
//     durability (sync.go);
//   - the counters of .ucm/stats and the metrics (counters.go), and the
//     latency observers the metrics install (latency.go).
//
// It returns Go errors and sentinels only (errors.go, and those of tiers,
// format and gpu): it imports neither go-fuse nor errno constants, so its
// tests run without a kernel.
package store
