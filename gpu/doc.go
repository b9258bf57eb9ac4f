// Package gpu moves bytes between host memory and an inference engine's
// device memory: the device side of the `.ucm/gpu` control file (docs/spec.md §8).
//
// A Device is opened once per daemon (Open, or Select, which also says why
// auto fell back). It is either the CUDA driver, loaded at run time from
// libcuda.so.1 through purego (no cgo and no CUDA headers at build time),
// or the simulated device, whose "device memory" is a shared-memory file
// the engine created, so machines without a GPU run the same data path
// and tests. Probe describes the driver's GPUs without opening a device.
//
// The engine hands the daemon its memory as a RegionSpec: a CUDA IPC
// handle (cuIpcGetMemHandle) or a VMM allocation's POSIX fd (passed over
// a Unix socket, package gpu/fdpass), an offset and a size, and the GPU's
// UUID; for the simulated device, the path or an fd of its shared-memory
// file. OpenRegion maps it into the daemon and checks it lies on the GPU
// named; a Region then copies host bytes in (a load: memory tier to
// engine) and out (a dump: engine to memory tier), one range at a time or
// as a batch that is submitted whole and waited for once; CopyInRegions
// scatters one batch over several regions (an engine's K and V tensors).
// A Session holds one engine connection's regions and closes them at once.
//
// Every copy checks its bounds before a byte moves: an out-of-range copy,
// or a batch with one out-of-range op, fails with ErrBounds and changes
// nothing. RegisterHost pins host memory (the memory tier's file mappings;
// Staging buffers) so the driver can DMA from it directly.
//
// The CUDA device runs one goroutine locked to an OS thread per GPU in
// use, which owns that GPU's primary context, and one more for host
// registration: a CUDA context is current per thread, so a call from an
// arbitrary goroutine would find none. A sticky driver error (a fault
// during a copy) resets the GPU's context and closes its regions
// (ErrReset). docs/gpu.md explains the choices.
package gpu
