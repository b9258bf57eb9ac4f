// Package bench measures the mount as an engine uses it: the real ucmfs
// binary runs `ucmfs mount` in a subprocess, and the benchmark process is
// the client that opens, writes, reads and stats block files through the
// kernel. Every number has its baselines measured in the same run, side by
// side: the same file operations on a plain tmpfs directory (/dev/shm) and
// on a directory of the disk that holds the nvme tier.
//
//	go test -run '^$' -bench . ./bench/            the mount benchmarks
//	UCMFS_SCALE=1 go test -run TestScale -v ./bench/  the 100k-block scale run
//
// The daemons run the default mount as root: the memory tier is the
// daemon's private tmpfs (huge=within_size), not --memory-dir /dev/shm.
//
// Targets (one sub-benchmark each): passthrough, fallback (a mount with
// --no-passthrough, whose daemon serves the bytes itself), tmpfs, nvme,
// uring (the passthrough mount over FUSE over io_uring, where the kernel
// offers it), tmpfs_tier, passthrough_hp and passthrough_hp_uring (where
// UCMFS_BENCH_PASSTHROUGH_HP names a passthrough_hp binary built by hand
// from a fetched libfuse: nothing of libfuse is in this repository; it
// serves a directory of the tmpfs_tier tmpfs), and, in the write
// benchmark only, disk_sync (the nvme directory, each file fdatasync'd:
// the disk's sustained write). Benchmarks:
//
//   - BenchmarkMountWrite2MiB: open(O_CREAT|O_EXCL|O_WRONLY), write 2 MiB,
//     close (through the mount, close publishes the block), sustained:
//     write-back runs beside the writes as in service.
//   - BenchmarkMountWriteBurst2MiB: the same, in bursts of new blocks
//     below the daemon's dirty background threshold (one burst per
//     iteration; its blocks removed after its timing).
//   - BenchmarkMountRead2MiB: open, read the whole 2 MiB, close.
//   - BenchmarkMountStatHit: stat(2) of published blocks the kernel has
//     cached; BenchmarkMountStatHitCold: the first stat of each block after
//     the mount started (the daemon restarts whenever its blocks run out).
//   - BenchmarkMountStatMiss: stat(2) of ids that do not exist, each a
//     distinct id, so the kernel's negative cache never answers.
//   - BenchmarkMountOpenClose: open(2) and close(2) of a published block.
//   - BenchmarkMountGetattr: statx(2) with AT_STATX_FORCE_SYNC, a GETATTR
//     of a block whose entry the kernel holds.
//
// The per-op benchmarks (StatMiss, StatHitCold, OpenClose, Getattr) time
// every operation and report p50-us, p99-us and max-us beside the mean;
// UCM's load reports mem-%, the share of its opens the memory tier
// served. make bench-anchor runs the anchor's set for two binaries and
// prints every ucmfs figure as a ratio to passthrough_hp's
// (internal/benchplot -anchor).
//
// TestScale (only with UCMFS_SCALE=1) fills a tier directory with 100k
// 4 KiB blocks of one model, mounts it and times `ls` of a shard, `du -s`
// of the model and a restart, and reads the daemon's resident memory. With
// UCMFS_SCALE_OUT=FILE it writes its results there as JSON.
//
// The daemon is the binary UCMFS_BENCH_BIN names, or one built from this
// tree on first use. UCMFS_BENCH_ROUNDS=N runs every benchmark's targets
// in turn N times (named target#01, ...) and the scale run's measurements
// after N restarts; make bench takes the medians. Directories: tier
// directories and the nvme baseline go under UCMFS_BENCH_DISK (default:
// the system temp directory), memory tiers and the tmpfs baseline under
// UCMFS_BENCH_SHM (default /dev/shm). Everything skips without /dev/fuse
// unless UCMFS_REQUIRE_FUSE=1. internal/benchplot turns the output into
// the table and picture of docs/performance.md.
package bench
