// Package gpu moves bytes between host memory and an inference engine's
// device memory: the device side of the `.ucm/gpu` control file (docs/spec.md §8).
//
// A Device is opened once per daemon (Open). It is either the CUDA driver,
// loaded at run time from libcuda.so.1 through purego (no cgo and no CUDA
// headers at build time), or the simulated device, whose "device memory" is
// a shared-memory file the engine created, so machines without a GPU run
// the same data path and tests.
//
// The engine hands the daemon its memory as a RegionSpec: a CUDA IPC handle
// (cuIpcGetMemHandle) plus a size, or, for the simulated device, the path
// of its shared-memory file plus a size. OpenRegion maps it into the daemon;
// a Region then copies host bytes in (a load: memory tier to engine) and
// out (a dump: engine to memory tier), one range at a time or as a batch
// that is submitted whole and waited for once.
//
// Every copy checks its bounds before a byte moves: an out-of-range copy,
// or a batch with one out-of-range op, fails with ErrBounds and changes
// nothing. RegisterHost pins host memory (the memory tier's file mappings)
// so the driver can DMA from it directly instead of staging through its
// own buffers.
//
// All CUDA calls run on one goroutine locked to one OS thread, which owns
// the primary contexts: a CUDA context is current per thread, so a call
// from an arbitrary goroutine would find none. docs/gpu.md explains the
// choices.
package gpu
