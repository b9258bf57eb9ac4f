package main

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
	"go.yaml.in/yaml/v3"
)

// mountConfig is everything `ucmfs mount` needs, resolved once from the
// defaults, then the --config file, then the flags. Nothing below the
// command line sees flags or YAML: runMount takes only this struct.
type mountConfig struct {
	Mountpoint      string        // absolute
	Memory          int64         // memory tier capacity, bytes
	MemoryDir       string        // RAM-backed parent of the memory tier's private directory
	Tiers           []tierSpec    // directory tiers, fastest first; empty: memory only
	WriteThrough    bool          // publish waits for the first persistent tier
	DirtyLimit      int64         // dirty bytes at which writers wait (0: 40% of Memory)
	DirtyBackground int64         // dirty bytes above which write-back runs before the expiry (0: 10% of Memory)
	DirtyExpire     time.Duration // age at which a dirty block is written back (0: at once)
	AllowOther      bool          // let other users see the mount
	TenantWrites    bool          // other users' writes with passthrough too (fs.Options.TenantWritePassthrough)
	Passthrough     bool          // FUSE passthrough (default: on as root)
	EntryTTL        time.Duration // kernel cache of published entries and attrs
	NegativeTTL     time.Duration // kernel cache of misses
	KernelNodes     int           // published files' nodes the kernel may keep; 0: fs default, <0: unbounded
	FUSETransport   string        // auto, uring or dev (fs.Transports)
	MaxFileSize     int64         // largest block file accepted, bytes
	MaxPending      int64         // bytes of files being written (0: the memory tier's size)
	MaxPendingUser  int64         // one user's share of MaxPending (0: all of it)
	MaxModelsUser   int           // models one user other than root may own (<0: no bound)
	MaxBytesUser    int64         // bytes one user's models may hold together (0: no bound)
	MaxDirs         int           // directories of files models (<0: no bound)
	MaxDirsUser     int           // what one user's mkdirs make of them (0: half, <0: no bound)
	MaxFiles        int           // files each tier holds (<0: no bound)
	MaxPinned       int64         // bytes users' pins keep in memory (0: half of it)
	LogLevel        slog.Level
	LogFormat       string            // text or json
	Debug           bool              // log every FUSE request
	ShutdownTimeout time.Duration     // bound on the flush at SIGINT/SIGTERM/SIGHUP
	ControlGroup    string            // group (name or gid) that may use the control files; "": owner only
	MetricsAddr     string            // HOST:PORT of the Prometheus metrics; "": off
	KVEvents        string            // the KV-event publisher's endpoint; "": off
	KVEventsReplay  string            // its replay endpoint; "": the default, "none": off
	KVEventsTopic   string            // its topic frame; "": kv-events
	KVEventsModels  string            // the models it publishes (comma-separated, "*": all); "": all on ipc, none allowed on tcp
	EventsWindow    int               // events kept for readers (.ucm/events, --kv-events)
	GPU             string            // device of .ucm/gpu: auto, cuda, sim or off
	GPUSocket       string            // socket passing VMM descriptors; "": the default (gpuSocketPath), "off": none
	CUDALibrary     string            // the CUDA driver library; "": libcuda.so.1
	Repr            store.ReprSetting // sidecar kind derived for models without their own (zero: mean)
	DefaultLayout   string            // layout of new models: ucmb ("") or ucm-posix
}

// tierSpec is one directory tier: --tier KIND:DIR[:SIZE] or a tiers: entry.
type tierSpec struct {
	Kind     string // nvme, nfs or ds3fs
	Dir      string // absolute
	Size     int64  // capacity in bytes; 0: what the filesystem has room for
	DirectIO *bool  // O_DIRECT writes into the tier (YAML direct_io); nil: the kind's default
	// Timeout bounds each operation on the tier (YAML timeout); 0: the
	// kind's (nvme 10s, nfs 60s, ds3fs 120s; tiers.DirConfig).
	Timeout time.Duration
}

// String is KIND:DIR, as the ready line shows it.
func (t tierSpec) String() string { return t.Kind + ":" + t.Dir }

// tierKinds are the directory tier kinds, in the order the help lists them.
var tierKinds = []string{"nvme", "nfs", "ds3fs"}

// defaultMountConfig is the configuration of `ucmfs mount MNT` with no
// other flag. The default tier is filled in by resolveTiers.
func defaultMountConfig() mountConfig {
	return mountConfig{
		Memory:          1 << 30,
		MemoryDir:       "/dev/shm",
		Passthrough:     os.Geteuid() == 0,
		EntryTTL:        time.Hour,
		NegativeTTL:     time.Second,
		MaxFileSize:     1 << 30,
		LogLevel:        slog.LevelInfo,
		LogFormat:       "text",
		ShutdownTimeout: 30 * time.Second,
		GPU:             "auto",
		FUSETransport:   "auto",
		EventsWindow:    1 << 16, // events.DefaultWindow
		MaxModelsUser:   store.DefaultMaxModelsPerUser,
		MaxDirs:         store.DefaultMaxDirs,
		MaxFiles:        tiers.DefaultMaxFiles,
		DirtyExpire:     tiers.DefaultDirtyExpire,
	}
}

// defaultTierDir is the per-user default nvme tier:
// $XDG_CACHE_HOME/ucmfs/nvme, else ~/.cache/ucmfs/nvme. Without either
// variable (mount(8) runs the mount helper with no $HOME) it is
// /var/lib/ucmfs/nvme for root, else the user's home directory from the
// password database.
func defaultTierDir() (string, error) {
	if cache, err := os.UserCacheDir(); err == nil {
		return filepath.Join(cache, "ucmfs", "nvme"), nil
	}
	if os.Geteuid() == 0 {
		return "/var/lib/ucmfs/nvme", nil
	}
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		return "", fmt.Errorf("no default tier directory (no $HOME, and no home directory for uid %d): give --tier nvme:DIR (mount -o tier=nvme:DIR)", os.Geteuid())
	}
	return filepath.Join(u.HomeDir, ".cache", "ucmfs", "nvme"), nil
}

// fileConfig is the YAML of --config. Every key is optional; a key that is
// present overrides the default, and a flag overrides the key. Unknown
// keys are an error, so a typo does not pass silently.
type fileConfig struct {
	Memory          *byteSize      `yaml:"memory"`
	MemoryDir       *string        `yaml:"memory_dir"`
	Tiers           *[]fileTier    `yaml:"tiers"`
	WriteThrough    *bool          `yaml:"write_through"`
	DirtyLimit      *byteSize      `yaml:"dirty_limit"`
	DirtyBackground *byteSize      `yaml:"dirty_background"`
	DirtyExpire     *time.Duration `yaml:"dirty_expire"`
	AllowOther      *bool          `yaml:"allow_other"`
	TenantWrites    *bool          `yaml:"tenant_write_passthrough"`
	Passthrough     *bool          `yaml:"passthrough"`
	EntryTTL        *time.Duration `yaml:"entry_ttl"`
	NegativeTTL     *time.Duration `yaml:"negative_ttl"`
	KernelNodes     *int           `yaml:"kernel_nodes"`
	FUSETransport   *string        `yaml:"fuse_transport"`
	MaxFileSize     *byteSize      `yaml:"max_file_size"`
	MaxPending      *byteSize      `yaml:"max_pending"`
	MaxPendingUser  *byteSize      `yaml:"max_pending_per_user"`
	MaxModelsUser   *int           `yaml:"max_models_per_user"`
	MaxBytesUser    *byteSize      `yaml:"max_bytes_per_user"`
	MaxDirs         *int           `yaml:"max_dirs"`
	MaxDirsUser     *int           `yaml:"max_dirs_per_user"`
	MaxFiles        *int           `yaml:"max_files"`
	MaxPinned       *byteSize      `yaml:"max_pinned"`
	LogLevel        *string        `yaml:"log_level"`
	LogFormat       *string        `yaml:"log_format"`
	Debug           *bool          `yaml:"debug"`
	ShutdownTimeout *time.Duration `yaml:"shutdown_timeout"`
	ControlGroup    *string        `yaml:"control_group"`
	MetricsAddr     *string        `yaml:"metrics_addr"`
	KVEvents        *string        `yaml:"kv_events"`
	KVEventsReplay  *string        `yaml:"kv_events_replay"`
	KVEventsTopic   *string        `yaml:"kv_events_topic"`
	KVEventsModels  *string        `yaml:"kv_events_models"`
	EventsWindow    *int           `yaml:"events_window"`
	GPU             *string        `yaml:"gpu"`
	GPUSocket       *string        `yaml:"gpu_socket"`
	CUDALibrary     *string        `yaml:"cuda_library"`
	ReprKind        *string        `yaml:"repr_kind"`
	DefaultLayout   *string        `yaml:"default_layout"`

	path  string   // the file, as given
	dir   string   // its directory: relative paths in the file resolve against it
	lines keyLines // where each key is, for errors
}

// fileTier is one entry of tiers: in the YAML file.
type fileTier struct {
	Kind string   `yaml:"kind"`
	Dir  string   `yaml:"dir"`
	Size byteSize `yaml:"size"`
	// DirectIO turns O_DIRECT writes into the tier on or off (default:
	// on for nvme, off for nfs and ds3fs; tiers.DirConfig).
	DirectIO *bool `yaml:"direct_io"`
	// Timeout bounds each operation on the tier: past it the tier is down
	// and fails fast (default: per kind; tiers.DirConfig).
	Timeout *time.Duration `yaml:"timeout"`
}

// byteSize is a size in YAML: a plain integer of bytes or a string such
// as "512MiB" or "10G" (see parseSize).
type byteSize int64

// UnmarshalYAML parses a size scalar.
func (b *byteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a size must be a scalar such as 1GiB", n.Line)
	}
	v, err := parseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: column %d: %w", n.Line, n.Column, err) // the column names the key
	}
	*b = byteSize(v)
	return nil
}

// loadConfigFile reads and strictly decodes a YAML config file. Errors
// name the file, the line and the key (config_check.go).
func loadConfigFile(path string) (fileConfig, error) {
	fc := fileConfig{path: path}
	data, err := os.ReadFile(path)
	if err != nil {
		return fc, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fc, err
	}
	fc.dir = filepath.Dir(abs)
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fc, configDecodeError(path, err, keyLines{})
	}
	if fc.lines, err = checkConfigNode(path, &doc); err != nil {
		return fc, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 { // an empty file is all defaults
		return fc, nil
	}
	if err := doc.Content[0].Decode(&fc); err != nil {
		return fc, configDecodeError(path, err, fc.lines)
	}
	return fc, nil
}

// errAt prefixes err with the file and line of key: "FILE:LINE: err".
func (fc fileConfig) errAt(key string, err error) error {
	if n, ok := fc.lines.lines[key]; ok {
		return fmt.Errorf("%s:%d: %w", fc.path, n, err)
	}
	return fmt.Errorf("%s: %w", fc.path, err)
}

// resolvePath makes a relative path of the file absolute against the
// file's directory.
func (fc fileConfig) resolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) || fc.dir == "" {
		return p
	}
	return filepath.Join(fc.dir, p)
}

// apply overlays the keys present in fc onto cfg.
func (fc fileConfig) apply(cfg *mountConfig) error {
	set := func(dst *int64, v *byteSize) {
		if v != nil {
			*dst = int64(*v)
		}
	}
	set(&cfg.Memory, fc.Memory)
	if fc.EventsWindow != nil {
		cfg.EventsWindow = *fc.EventsWindow
	}
	if fc.KernelNodes != nil {
		cfg.KernelNodes = *fc.KernelNodes
	}
	set(&cfg.MaxFileSize, fc.MaxFileSize)
	set(&cfg.MaxPending, fc.MaxPending)
	set(&cfg.MaxPinned, fc.MaxPinned)
	set(&cfg.MaxPendingUser, fc.MaxPendingUser)
	set(&cfg.MaxBytesUser, fc.MaxBytesUser)
	for dst, v := range map[*int]*int{&cfg.MaxModelsUser: fc.MaxModelsUser, &cfg.MaxDirs: fc.MaxDirs, &cfg.MaxDirsUser: fc.MaxDirsUser, &cfg.MaxFiles: fc.MaxFiles} {
		if v != nil {
			*dst = *v
		}
	}
	set(&cfg.DirtyLimit, fc.DirtyLimit)
	set(&cfg.DirtyBackground, fc.DirtyBackground)
	for dst, v := range map[*bool]*bool{&cfg.WriteThrough: fc.WriteThrough, &cfg.AllowOther: fc.AllowOther,
		&cfg.TenantWrites: fc.TenantWrites, &cfg.Passthrough: fc.Passthrough, &cfg.Debug: fc.Debug} {
		if v != nil {
			*dst = *v
		}
	}
	for dst, v := range map[*time.Duration]*time.Duration{&cfg.EntryTTL: fc.EntryTTL,
		&cfg.NegativeTTL: fc.NegativeTTL, &cfg.ShutdownTimeout: fc.ShutdownTimeout, &cfg.DirtyExpire: fc.DirtyExpire} {
		if v != nil {
			*dst = *v
		}
	}
	for dst, v := range map[*string]*string{&cfg.ControlGroup: fc.ControlGroup,
		&cfg.MetricsAddr: fc.MetricsAddr, &cfg.GPU: fc.GPU, &cfg.LogFormat: fc.LogFormat,
		&cfg.FUSETransport: fc.FUSETransport, &cfg.KVEvents: fc.KVEvents, &cfg.KVEventsReplay: fc.KVEventsReplay,
		&cfg.KVEventsTopic: fc.KVEventsTopic, &cfg.KVEventsModels: fc.KVEventsModels} {
		if v != nil {
			*dst = *v
		}
	}
	if fc.MemoryDir != nil {
		cfg.MemoryDir = fc.resolvePath(*fc.MemoryDir)
	}
	if fc.GPUSocket != nil {
		cfg.GPUSocket = *fc.GPUSocket
		if cfg.GPUSocket != "" && cfg.GPUSocket != "off" {
			cfg.GPUSocket = fc.resolvePath(cfg.GPUSocket)
		}
	}
	if fc.CUDALibrary != nil {
		cfg.CUDALibrary = *fc.CUDALibrary
		if strings.Contains(cfg.CUDALibrary, "/") { // a bare name is the dynamic loader's to find
			cfg.CUDALibrary = fc.resolvePath(cfg.CUDALibrary)
		}
	}
	if fc.ReprKind != nil {
		r, err := store.ParseReprSetting(*fc.ReprKind)
		if err != nil {
			return fc.errAt("repr_kind", fmt.Errorf("repr_kind: %w", err))
		}
		cfg.Repr = r
	}
	if fc.DefaultLayout != nil {
		if err := applyLayout(cfg, "default_layout", *fc.DefaultLayout); err != nil {
			return fc.errAt("default_layout", err)
		}
	}
	if fc.LogLevel != nil {
		lvl, err := parseLogLevel(*fc.LogLevel)
		if err != nil {
			return fc.errAt("log_level", fmt.Errorf("log_level: %w", err))
		}
		cfg.LogLevel = lvl
	}
	if fc.LogFormat != nil {
		if err := checkLogFormat(*fc.LogFormat); err != nil {
			return fc.errAt("log_format", fmt.Errorf("log_format: %w", err))
		}
	}
	if fc.Tiers != nil {
		cfg.Tiers = []tierSpec{} // present, possibly empty: memory only
		for i, t := range *fc.Tiers {
			if t.Kind == "" || t.Dir == "" {
				key := fmt.Sprintf("tiers[%d]", i)
				return fc.errAt(key, fmt.Errorf("%s: needs kind and dir", key))
			}
			spec := tierSpec{Kind: t.Kind, Dir: fc.resolvePath(t.Dir), Size: int64(t.Size), DirectIO: t.DirectIO}
			if t.Timeout != nil {
				if *t.Timeout <= 0 {
					key := fmt.Sprintf("tiers[%d].timeout", i)
					return fc.errAt(key, fmt.Errorf("%s: want a duration > 0 such as 5s, got %v", key, *t.Timeout))
				}
				spec.Timeout = *t.Timeout
			}
			cfg.Tiers = append(cfg.Tiers, spec)
		}
	}
	return nil
}

// parseLogLevel accepts debug, info, warn and error.
func parseLogLevel(s string) (slog.Level, error) {
	var lvl slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		return lvl, lvl.UnmarshalText([]byte(s))
	}
	return lvl, fmt.Errorf("log level %q: want debug, info, warn or error", s)
}

// parseTierSpec parses KIND:DIR[:SIZE]. A last ":SIZE" part is taken as a
// size only when it parses as one, so a directory may contain ':'.
func parseTierSpec(s string) (tierSpec, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return tierSpec{}, fmt.Errorf("tier %q: want KIND:DIR[:SIZE]", s)
	}
	t := tierSpec{Kind: kind, Dir: rest}
	if i := strings.LastIndexByte(rest, ':'); i > 0 {
		if n, err := parseSize(rest[i+1:]); err == nil {
			t.Dir, t.Size = rest[:i], n
		}
	}
	return t, nil
}

// sizeUnits are the suffixes parseSize accepts. Single letters and the
// IEC forms are powers of 1024; KB, MB, GB, TB are powers of 1000.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// parseSize parses a byte count: "1073741824", "512MiB", "1GiB", "10G",
// "1.5g", "100MB". Units are case-insensitive.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("size %q: want bytes or a number with K, M, G, T, KiB, MiB, GiB, TiB, KB, MB, GB, TB", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v*float64(mult) >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: not a number of bytes in range", s)
	}
	return int64(v * float64(mult)), nil
}

// formatSize writes n bytes with one decimal and a binary unit: "1.0 GiB".
func formatSize(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}

// resolve checks cfg and fills in what depends on the machine: absolute
// paths and, when no tier was configured, the default nvme tier.
// noTiers keeps an empty tier list (memory only).
func (cfg *mountConfig) resolve(noTiers bool) error {
	if cfg.Memory <= 0 {
		return fmt.Errorf("memory size must be > 0")
	}
	if ram, swap, ok := machineMemory(); ok && cfg.Memory > ram+swap {
		return fmt.Errorf("memory %s is more than this machine has (%s of RAM, %s of swap): the memory tier lives in RAM; give --memory at most that",
			formatSize(cfg.Memory), formatSize(ram), formatSize(swap))
	}
	if cfg.MaxFileSize <= 0 || cfg.EntryTTL < 0 || cfg.NegativeTTL < 0 || cfg.ShutdownTimeout <= 0 {
		return fmt.Errorf("max-file-size and shutdown-timeout must be > 0, TTLs >= 0")
	}
	if cfg.DirtyLimit < 0 || cfg.DirtyBackground < 0 || cfg.DirtyExpire < 0 {
		return fmt.Errorf("dirty-limit, dirty-background and dirty-expire must be >= 0")
	}
	if cfg.DirtyLimit > 0 && cfg.DirtyBackground > cfg.DirtyLimit {
		return fmt.Errorf("dirty-background (%s) must not exceed dirty-limit (%s)", formatSize(cfg.DirtyBackground), formatSize(cfg.DirtyLimit))
	}
	if err := checkKVEvents(*cfg); err != nil {
		return err
	}
	if err := checkControl(*cfg); err != nil {
		return err
	}
	if err := checkLogFormat(cfg.LogFormat); err != nil {
		return err
	}
	if cfg.Tiers == nil && !noTiers {
		dir, err := defaultTierDir()
		if err != nil {
			return err
		}
		cfg.Tiers = []tierSpec{{Kind: "nvme", Dir: dir}}
	}
	var err error
	if cfg.Mountpoint != "" { // "" only for --print-config without one
		if cfg.Mountpoint, err = filepath.Abs(cfg.Mountpoint); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i := range cfg.Tiers {
		t := &cfg.Tiers[i]
		if !slices.Contains(tierKinds, t.Kind) {
			return fmt.Errorf("tier %s: kind must be one of %s", t, strings.Join(tierKinds, ", "))
		}
		if t.Dir, err = filepath.Abs(t.Dir); err != nil {
			return err
		}
		if seen[t.Dir] {
			return fmt.Errorf("tier directory %s is given twice", t.Dir)
		}
		seen[t.Dir] = true
		if cfg.Mountpoint != "" && (within(t.Dir, cfg.Mountpoint) || within(cfg.Mountpoint, t.Dir)) {
			return fmt.Errorf("tier directory %s and mount point %s must not contain each other", t.Dir, cfg.Mountpoint)
		}
	}
	return nil
}

// within reports whether path is dir or below it (both clean and absolute).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// machineMemory returns the machine's RAM and swap in bytes, from
// /proc/meminfo (ok false where it cannot be read: no check then).
func machineMemory() (ram, swap int64, ok bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			ram, ok = kb<<10, true
		case "SwapTotal:":
			swap = kb << 10
		}
	}
	return ram, swap, ok
}
