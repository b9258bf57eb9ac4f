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
// Benchmarks (one sub-benchmark per target: passthrough, fallback, tmpfs,
// nvme; "fallback" is a mount with --no-passthrough, whose daemon serves
// the bytes itself):
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
