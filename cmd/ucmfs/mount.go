package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/fs"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/internal/connlimit"
	ucmmetrics "github.com/ucmfs/ucmfs/metrics"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/urfave/cli/v3"
)

func init() { register(mountCommand) }

// Flag categories of `ucmfs mount --help`.
const (
	catStorage   = "Storage"
	catFUSE      = "FUSE"
	catLifecycle = "Lifecycle"
	catLogging   = "Logging"
)

// daemonGCPercent is the daemon's GOGC unless the environment sets one.
// Its heap is mostly long-lived metadata (the tiers' indexes, a node for
// every block the kernel has looked up), so the default of 100 lets RSS
// reach twice that: with 100k blocks after `du -s` of them, 154 MiB at
// 100 against 113 MiB at 30, and `du -s` 0.62 s against 0.76 s.
const daemonGCPercent = 30

// mountCommand is `ucmfs mount`: the daemon, in the foreground.
func mountCommand() *cli.Command { return newMountCommand(runMount) }

// newMountCommand builds `ucmfs mount` around run, which receives the
// resolved configuration; tests pass a run that only records it.
func newMountCommand(run func(ctx context.Context, cfg mountConfig, stderr io.Writer) error) *cli.Command {
	return &cli.Command{
		Name:      "mount",
		Usage:     "mount the KV-cache block filesystem (foreground unless --background; SIGINT/SIGTERM/SIGHUP flush and unmount)",
		ArgsUsage: "MOUNTPOINT",
		Description: "Serves <model>/<hh>/<id>.bin block files from a memory tier that spills, in order,\n" +
			"to directory tiers. The mount is ready when MOUNTPOINT/.ucm/stats can be read; a line\n" +
			"'ucmfs: mounted on ...' on stderr says so. Settings come from the defaults, then\n" +
			"--config FILE, then the flags. See docs/operations.md.",
		Flags:                     slices.Concat(storageFlags(), fuseFlags(), controlFlags(), kvEventsFlags(), lifecycleFlags(), backgroundFlags(), loggingFlags()),
		DisableSliceFlagSeparator: true, // a tier directory may contain ','
		Action: func(ctx context.Context, cmd *cli.Command) error {
			cfg, err := mountConfigFrom(cmd)
			if err != nil {
				return err
			}
			if cmd.Bool("print-config") {
				return printConfig(cmd.Root().Writer, cfg)
			}
			if cmd.Bool("background") {
				return startBackground(ctx, cfg, cmd.String("log-file"), cmd.Root().ErrWriter)
			}
			return run(ctx, cfg, cmd.Root().ErrWriter)
		},
	}
}

// storageFlags are the memory and directory tier flags.
func storageFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "memory", Category: catStorage, Value: "1GiB",
			Usage: "`SIZE` of the memory tier: bytes, or 512MiB, 1GiB, 10G, ..."},
		&cli.StringFlag{Name: "memory-dir", Category: catStorage, Value: "/dev/shm", TakesFile: true,
			Usage: "tmpfs `DIR` that holds the memory tier's private directory"},
		&cli.StringSliceFlag{Name: "tier", Category: catStorage,
			Usage: "directory `TIER` KIND:DIR[:SIZE], KIND nvme|nfs|ds3fs; repeatable, fastest first " +
				"(default: nvme:$XDG_CACHE_HOME/ucmfs/nvme, else nvme:~/.cache/ucmfs/nvme; with no $HOME, /var/lib/ucmfs/nvme as root)"},
		&cli.BoolFlag{Name: "memory-only", Category: catStorage,
			Usage: "no directory tier: a volatile cache in RAM"},
		&cli.BoolFlag{Name: "write-through", Category: catStorage,
			Usage: "close() returns once the block is durable on the first directory tier (fsynced)"},
		&cli.StringFlag{Name: "dirty-limit", Category: catStorage, Value: "0",
			Usage: "dirty bytes (`SIZE`: in memory only, not yet on a directory tier) at which close() waits for write-back (0: 40% of --memory)"},
		&cli.StringFlag{Name: "dirty-background", Category: catStorage, Value: "0",
			Usage: "dirty bytes (`SIZE`) above which write-back runs, oldest first, before the blocks expire (0: 10% of --memory)"},
		&cli.DurationFlag{Name: "dirty-expire", Category: catStorage, Value: defaultMountConfig().DirtyExpire,
			Usage: "age (`DURATION`) at which a dirty block is written back; 0: at once"},
		&cli.StringFlag{Name: "config", Category: catStorage, TakesFile: true,
			Usage: "YAML `FILE` with the same settings (flags override it)"},
		printConfigFlag(),
	}
}

// fuseFlags are the kernel-facing flags.
func fuseFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "allow-other", Category: catFUSE, Usage: "let other users access the mount"},
		&cli.BoolFlag{Name: "tenant-write-passthrough", Category: catFUSE,
			Usage: "with --allow-other, let the kernel write other users' files with passthrough too (faster; their --max-pending-per-user share is then checked at close and each second, not at each write)"},
		&cli.BoolFlag{Name: "no-passthrough", Category: catFUSE,
			Usage: "serve reads from the daemon instead of FUSE passthrough (passthrough is on by default as root)"},
		&cli.DurationFlag{Name: "negative-ttl", Category: catFUSE, Value: defaultMountConfig().NegativeTTL,
			Usage: "how long (`DURATION`) the kernel caches a miss; blocks another host publishes on a shared tier appear after it"},
		&cli.DurationFlag{Name: "entry-ttl", Category: catFUSE, Value: defaultMountConfig().EntryTTL,
			Usage: "how long (`DURATION`) the kernel caches published entries and attributes"},
		&cli.IntFlag{Name: "kernel-nodes", Category: catFUSE, Value: fs.DefaultKernelNodes,
			Usage: "most published files (`N`) the kernel keeps looked up; older ones are handed back, at a cost to long walks (-1: no bound)"},
		&cli.StringFlag{Name: "fuse-transport", Category: catFUSE, Value: fs.TransportAuto,
			Usage: "how requests reach the daemon (`HOW`): uring (FUSE over io_uring, which an admin enables: docs/operations.md), dev (/dev/fuse), or auto (uring where the kernel offers it, else dev)"},
		&cli.StringFlag{Name: "max-file-size", Category: catFUSE, Value: "1GiB",
			Usage: "largest block file accepted (`SIZE`); larger writes fail"},
		&cli.StringFlag{Name: "max-pending", Category: catFUSE, Value: "0",
			Usage: "bytes (`SIZE`) of files being written, not yet published, in all (0: the memory tier's size); past it a create or write fails with ENOSPC"},
		&cli.StringFlag{Name: "max-pending-per-user", Category: catFUSE, Value: "0",
			Usage: "one user's share (`SIZE`) of --max-pending (0: half of it); past it EDQUOT"},
		&cli.IntFlag{Name: "max-models-per-user", Category: catFUSE, Value: store.DefaultMaxModelsPerUser,
			Usage: "most models (`N`) one user other than root may own; past it mkdir fails with EDQUOT (-1: no bound)"},
		&cli.IntFlag{Name: "max-dirs", Category: catFUSE, Value: store.DefaultMaxDirs,
			Usage: "most directories (`N`) of files models the mount keeps; past it mkdir fails with ENOSPC (-1: no bound)"},
		&cli.IntFlag{Name: "max-dirs-per-user", Category: catFUSE, Value: 0,
			Usage: "most directories (`N`) of --max-dirs one user's mkdirs make, root included (0: half of it, -1: no bound); past it EDQUOT"},
		&cli.IntFlag{Name: "max-files", Category: catStorage, Value: tiers.DefaultMaxFiles,
			Usage: "most files (`N`) each tier holds, the memory tier and each directory tier (-1: no bound): each costs the daemon an index entry, whatever its size; past it the least recently used file goes, as when a tier is full"},
		&cli.StringFlag{Name: "max-pinned", Category: catStorage, Value: "0",
			Usage: "most bytes (`SIZE`) users' pins (user.ucm.pinned) keep in the memory tier (0: half of --memory); past it a pin fails with ENOSPC"},
		&cli.StringFlag{Name: "max-bytes-per-user", Category: catFUSE, Value: "0",
			Usage: "most bytes (`SIZE`) the models one user other than root owns may hold together; past it a publish fails with EDQUOT (0: no bound)"},
	}
}

// lifecycleFlags are the shutdown flags.
func lifecycleFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "shutdown-timeout", Category: catLifecycle, Value: defaultMountConfig().ShutdownTimeout,
			Usage: "at SIGINT/SIGTERM/SIGHUP, how long (`DURATION`) to write dirty blocks to the first directory tier"},
	}
}

// loggingFlags are the log flags.
func loggingFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-level", Category: catLogging, Value: "info", Usage: "`LEVEL` debug, info, warn or error"},
		logFormatFlag(),
		&cli.BoolFlag{Name: "debug", Category: catLogging, Usage: "log every FUSE request (very verbose)"},
	}
}

// mountConfigFrom turns the command line into a mountConfig: defaults,
// then the --config file, then every flag that was set. Bad input is a
// usage error (exit status 2).
func mountConfigFrom(cmd *cli.Command) (mountConfig, error) {
	cfg := defaultMountConfig()
	if n := cmd.Args().Len(); n != 1 && !(n == 0 && cmd.Bool("print-config")) {
		return cfg, usageErrorf("mount: want exactly one MOUNTPOINT, got %d arguments", cmd.Args().Len())
	}
	cfg.Mountpoint = cmd.Args().First()
	if path := cmd.String("config"); path != "" {
		fc, err := loadConfigFile(path)
		if err == nil {
			err = fc.apply(&cfg)
		}
		if err != nil {
			return cfg, usageErrorf("mount: config: %v", err)
		}
	}
	if err := applyFlags(cmd, &cfg); err != nil {
		return cfg, usageErrorf("mount: %v", err)
	}
	if err := cfg.resolve(cmd.Bool("memory-only")); err != nil {
		return cfg, usageErrorf("mount: %v", err)
	}
	return cfg, nil
}

// applyFlags overlays the flags the user set onto cfg.
func applyFlags(cmd *cli.Command, cfg *mountConfig) error {
	for name, dst := range map[string]*int64{"memory": &cfg.Memory, "max-file-size": &cfg.MaxFileSize,
		"max-pending": &cfg.MaxPending, "max-pending-per-user": &cfg.MaxPendingUser, "max-bytes-per-user": &cfg.MaxBytesUser, "max-pinned": &cfg.MaxPinned,
		"dirty-limit": &cfg.DirtyLimit, "dirty-background": &cfg.DirtyBackground} {
		if cmd.IsSet(name) {
			n, err := parseSize(cmd.String(name))
			if err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
			*dst = n
		}
	}
	for name, dst := range map[string]*bool{"write-through": &cfg.WriteThrough, "allow-other": &cfg.AllowOther,
		"tenant-write-passthrough": &cfg.TenantWrites, "debug": &cfg.Debug} {
		if cmd.IsSet(name) {
			*dst = cmd.Bool(name)
		}
	}
	if cmd.IsSet("no-passthrough") {
		cfg.Passthrough = !cmd.Bool("no-passthrough")
	}
	for name, dst := range map[string]*time.Duration{"negative-ttl": &cfg.NegativeTTL, "entry-ttl": &cfg.EntryTTL,
		"shutdown-timeout": &cfg.ShutdownTimeout, "dirty-expire": &cfg.DirtyExpire} {
		if cmd.IsSet(name) {
			*dst = cmd.Duration(name)
		}
	}
	if cmd.IsSet("memory-dir") {
		cfg.MemoryDir = cmd.String("memory-dir")
	}
	if cmd.IsSet("fuse-transport") {
		cfg.FUSETransport = cmd.String("fuse-transport")
	}
	if !slices.Contains(fs.Transports, cfg.FUSETransport) {
		return fmt.Errorf("fuse transport %q: want one of %s", cfg.FUSETransport, strings.Join(fs.Transports, ", "))
	}
	if cmd.IsSet("max-models-per-user") {
		cfg.MaxModelsUser = int(cmd.Int("max-models-per-user"))
	}
	if cmd.IsSet("max-dirs") {
		cfg.MaxDirs = int(cmd.Int("max-dirs"))
	}
	if cmd.IsSet("max-files") {
		cfg.MaxFiles = int(cmd.Int("max-files"))
	}
	if cmd.IsSet("max-dirs-per-user") {
		cfg.MaxDirsUser = int(cmd.Int("max-dirs-per-user"))
	}
	if cmd.IsSet("kernel-nodes") {
		cfg.KernelNodes = int(cmd.Int("kernel-nodes"))
	}
	applyKVEventsFlags(cmd, cfg)
	if err := applyControlFlags(cmd, cfg); err != nil {
		return err
	}
	if cmd.IsSet("log-format") {
		cfg.LogFormat = cmd.String("log-format")
	}
	if cmd.IsSet("log-level") {
		lvl, err := parseLogLevel(cmd.String("log-level"))
		if err != nil {
			return err
		}
		cfg.LogLevel = lvl
	}
	switch {
	case cmd.Bool("memory-only") && len(cmd.StringSlice("tier")) > 0:
		return errors.New("--memory-only and --tier exclude each other")
	case cmd.Bool("memory-only"):
		cfg.Tiers = []tierSpec{}
	case cmd.IsSet("tier"):
		cfg.Tiers = nil
		for _, s := range cmd.StringSlice("tier") {
			t, err := parseTierSpec(s)
			if err != nil {
				return err
			}
			cfg.Tiers = append(cfg.Tiers, t)
		}
	}
	return nil
}

// runMount mounts cfg and serves until a signal (ctx is cancelled) or an
// external unmount; see serve for the shutdown.
func runMount(ctx context.Context, cfg mountConfig, stderr io.Writer) error {
	log, flushLog := newLogger(cfg, stderr)
	defer flushLog()
	life := &lifecycle{log: log}
	if err := checkMountpoint(cfg.Mountpoint); err != nil {
		return err
	}
	metrics, err := listenMetrics(cfg.MetricsAddr)
	if err != nil {
		return err
	}
	defer metrics.close()
	dev, err := openGPU(cfg.GPU, cfg.CUDALibrary, log)
	if err != nil {
		return err
	}
	defer closeGPU(dev, log) // after the stack, closed before runMount returns
	var host tiers.HostRegistrar
	if dev != nil {
		host = gpu.TierPages{Dev: dev}
	}
	st, err := buildStack(cfg, log, host)
	if err != nil {
		return err
	}
	life.stack = st
	warnOpenTiers(cfg, log)
	// After the index rebuild: its heap is all kept, so the default GOGC
	// collects fewer times while it grows; what it let go (listings, the
	// snapshot's bytes) goes back to the system before the mount is ready.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(daemonGCPercent)
	}
	debug.FreeOSMemory()
	core, err := store.New(st, store.Options{
		MaxFileSize: cfg.MaxFileSize, Logger: log, Repr: cfg.Repr,
		MaxPending: cfg.MaxPending, MaxPendingPerUser: cfg.MaxPendingUser,
		MaxModelsPerUser: cfg.MaxModelsUser, MaxBytesPerUser: cfg.MaxBytesUser,
		MaxDirs: cfg.MaxDirs, MaxDirsPerUser: cfg.MaxDirsUser,
		Layout: cfg.DefaultLayout, EventsWindow: cfg.EventsWindow,
	})
	if err != nil {
		closeStack(st, cfg.ShutdownTimeout, log)
		return err
	}
	budget := connlimit.FromRlimit() // every listener's connections together
	kv, err := startKVEvents(cfg, core, log, stderr, budget)
	if err != nil {
		core.Close()
		closeStack(st, cfg.ShutdownTimeout, log)
		return err
	}
	if kv != nil {
		defer kv.Close()
	}
	clampEntryTTL(&cfg, log)
	exported := ucmmetrics.New(core) // before the mount: it installs the latency histograms
	srv, err := fs.Mount(cfg.Mountpoint, core, fs.Options{
		Passthrough: cfg.Passthrough, AllowOther: cfg.AllowOther, TenantWritePassthrough: cfg.TenantWrites,
		EntryTTL: cfg.EntryTTL, NegativeTTL: cfg.NegativeTTL, KernelNodes: cfg.KernelNodes,
		Logger: log, Debug: cfg.Debug, ControlGroup: cfg.ControlGroup,
		GPU: dev, GPUSocket: gpuSocketPath(cfg, dev, log), Transport: cfg.FUSETransport,
	})
	if err != nil {
		core.Close()
		closeStack(st, cfg.ShutdownTimeout, log)
		return mountError(cfg.Mountpoint, err)
	}
	if metrics != nil {
		metrics.start(exported.Handler(), life, log, budget)
		announce(cfg, log, stderr, "metrics on %s", metrics.URL())
	}
	return serve(ctx, cfg, srv, core, st, life, log, stderr)
}

// buildStack prepares the tier directories and builds the stack with its
// memory and directory tiers (tiers.New closes what it built on
// failure). host, when not nil, registers the memory tier's mappings for
// GPU DMA.
func buildStack(cfg mountConfig, log *slog.Logger, host tiers.HostRegistrar) (*tiers.Stack, error) {
	var dirs []tiers.DirConfig
	for _, t := range cfg.Tiers {
		if err := prepareTierDir(t); err != nil {
			return nil, err
		}
		dirs = append(dirs, tiers.DirConfig{Kind: t.Kind, Dir: t.Dir, Capacity: t.Size, MaxFiles: int64(cfg.MaxFiles), Revalidate: sharedRevalidate(cfg),
			Rescan: sharedRescan(cfg), DirectIO: t.DirectIO, OpTimeout: t.Timeout})
	}
	st, err := tiers.New(tiers.StackConfig{WriteThrough: cfg.WriteThrough, Logger: log,
		DirtyLimit: cfg.DirtyLimit, DirtyBackground: cfg.DirtyBackground, DirtyExpire: cfg.DirtyExpire},
		tiers.MemConfig{Capacity: cfg.Memory, MaxFiles: int64(cfg.MaxFiles), MaxPinned: cfg.MaxPinned, Dir: cfg.MemoryDir, Host: host, Pending: pendingBound(cfg)}, dirs...)
	var te *tiers.TierError
	switch {
	case errors.As(err, &te) && te.ID == tiers.Memory:
		return nil, fmt.Errorf("memory tier in %s: %w (choose a tmpfs directory with --memory-dir)", cfg.MemoryDir, te.Err)
	case errors.As(err, &te):
		return nil, fmt.Errorf("tier %s: %w", cfg.Tiers[te.ID-1], te.Err)
	}
	return st, err
}

// pendingBound is the room the memory tier's filesystem keeps, beyond its
// capacity, for the files being written (--max-pending, by default the
// memory tier's size).
func pendingBound(cfg mountConfig) int64 {
	if cfg.MaxPending > 0 {
		return cfg.MaxPending
	}
	return cfg.Memory
}

// prepareTierDir creates a missing nvme tier directory, 0700. A shared (nfs,
// ds3fs) directory must exist: creating it would put the "shared" tier on
// the local disk when the network filesystem is not mounted.
func prepareTierDir(t tierSpec) error {
	fi, err := os.Stat(t.Dir)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("tier %s: not a directory", t)
	case err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist) && t.Kind == "nvme":
		// Private: its files are every model's blocks, 0700 models' too.
		// (Its parents, made on the way, are ordinary directories.)
		if err := os.MkdirAll(filepath.Dir(t.Dir), 0o755); err != nil {
			return err
		}
		return os.Mkdir(t.Dir, 0o700)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("tier %s: directory does not exist (is the %s filesystem mounted?)", t, strings.ToUpper(t.Kind))
	}
	return fmt.Errorf("tier %s: %w", t, err)
}

// warnOpenTiers warns, on a mount shared with other users, of each tier
// directory they can enter: its files are the blocks of every model,
// those of 0700 models included, readable there whatever the mount says.
// A tier directory ucmfs makes is 0700; one made before keeps its mode.
func warnOpenTiers(cfg mountConfig, log *slog.Logger) {
	if !cfg.AllowOther {
		return
	}
	for _, t := range cfg.Tiers {
		fi, err := os.Stat(t.Dir)
		if err == nil && fi.Mode().Perm()&0o011 != 0 {
			log.Warn("a tier directory other users can enter: with --allow-other they read every model's blocks there; chmod 700 it",
				"tier", t.String(), "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
		}
	}
}
