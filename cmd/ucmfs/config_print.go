package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/store"
	"github.com/urfave/cli/v3"
	"go.yaml.in/yaml/v3"
)

// printConfigFlag is `ucmfs mount --print-config`.
func printConfigFlag() cli.Flag {
	return &cli.BoolFlag{Name: "print-config", Category: catStorage,
		Usage: "print the effective configuration (defaults, --config, flags) as YAML and exit; MOUNTPOINT is optional"}
}

// printedConfig is the effective configuration in the --config format,
// every key present, so the output is a complete config file.
type printedConfig struct {
	Memory          string        `yaml:"memory"`
	MemoryDir       string        `yaml:"memory_dir"`
	Tiers           []printedTier `yaml:"tiers"`
	WriteThrough    bool          `yaml:"write_through"`
	DirtyLimit      string        `yaml:"dirty_limit"`
	DirtyBackground string        `yaml:"dirty_background"`
	DirtyExpire     string        `yaml:"dirty_expire"`
	AllowOther      bool          `yaml:"allow_other"`
	TenantWrites    bool          `yaml:"tenant_write_passthrough"`
	Passthrough     bool          `yaml:"passthrough"`
	EntryTTL        string        `yaml:"entry_ttl"`
	NegativeTTL     string        `yaml:"negative_ttl"`
	KernelNodes     int           `yaml:"kernel_nodes"`
	FUSETransport   string        `yaml:"fuse_transport"`
	MaxFileSize     string        `yaml:"max_file_size"`
	MaxPending      string        `yaml:"max_pending"`
	MaxPendingUser  string        `yaml:"max_pending_per_user"`
	MaxModelsUser   int           `yaml:"max_models_per_user"`
	MaxBytesUser    string        `yaml:"max_bytes_per_user"`
	MaxDirs         int           `yaml:"max_dirs"`
	MaxDirsUser     int           `yaml:"max_dirs_per_user"`
	MaxFiles        int           `yaml:"max_files"`
	MaxPinned       string        `yaml:"max_pinned"`
	LogLevel        string        `yaml:"log_level"`
	LogFormat       string        `yaml:"log_format"`
	Debug           bool          `yaml:"debug"`
	ShutdownTimeout string        `yaml:"shutdown_timeout"`
	ControlGroup    string        `yaml:"control_group"`
	MetricsAddr     string        `yaml:"metrics_addr"`
	KVEvents        string        `yaml:"kv_events"`
	KVEventsReplay  string        `yaml:"kv_events_replay"`
	KVEventsTopic   string        `yaml:"kv_events_topic"`
	KVEventsModels  string        `yaml:"kv_events_models"`
	EventsWindow    int           `yaml:"events_window"`
	GPU             string        `yaml:"gpu"`
	GPUSocket       string        `yaml:"gpu_socket"`
	CUDALibrary     string        `yaml:"cuda_library"`
	ReprKind        string        `yaml:"repr_kind"`
	DefaultLayout   string        `yaml:"default_layout"`
}

// printedTier is one tier of printedConfig.
type printedTier struct {
	Kind     string `yaml:"kind"`
	Dir      string `yaml:"dir"`
	Size     string `yaml:"size,omitempty"`
	DirectIO *bool  `yaml:"direct_io,omitempty"` // only when the configuration sets it
	Timeout  string `yaml:"timeout,omitempty"`   // only when the configuration sets it
}

// printConfig writes cfg as a YAML config file that gives cfg back.
func printConfig(w io.Writer, cfg mountConfig) error {
	p := printedConfig{
		Memory: exactSize(cfg.Memory), MemoryDir: cfg.MemoryDir, Tiers: []printedTier{},
		WriteThrough: cfg.WriteThrough, DirtyLimit: exactSize(cfg.DirtyLimit), DirtyBackground: exactSize(cfg.DirtyBackground),
		DirtyExpire: cfg.DirtyExpire.String(), AllowOther: cfg.AllowOther, TenantWrites: cfg.TenantWrites, Passthrough: cfg.Passthrough,
		EntryTTL: cfg.EntryTTL.String(), NegativeTTL: cfg.NegativeTTL.String(), KernelNodes: cfg.KernelNodes, FUSETransport: cfg.FUSETransport,
		MaxFileSize: exactSize(cfg.MaxFileSize),
		MaxPending:  exactSize(cfg.MaxPending), MaxPendingUser: exactSize(cfg.MaxPendingUser),
		MaxModelsUser: cfg.MaxModelsUser, MaxBytesUser: exactSize(cfg.MaxBytesUser),
		MaxDirs: cfg.MaxDirs, MaxDirsUser: cfg.MaxDirsUser, MaxFiles: cfg.MaxFiles, MaxPinned: exactSize(cfg.MaxPinned),
		LogLevel: strings.ToLower(cfg.LogLevel.String()), LogFormat: cfg.LogFormat, Debug: cfg.Debug,
		ShutdownTimeout: cfg.ShutdownTimeout.String(), ControlGroup: cfg.ControlGroup, MetricsAddr: cfg.MetricsAddr,
		KVEvents: cfg.KVEvents, KVEventsReplay: cfg.KVEventsReplay, KVEventsTopic: cfg.KVEventsTopic, KVEventsModels: cfg.KVEventsModels, EventsWindow: cfg.EventsWindow,
		GPU: cfg.GPU, GPUSocket: cfg.GPUSocket, CUDALibrary: cfg.CUDALibrary, ReprKind: reprString(cfg.Repr),
		DefaultLayout: layoutString(cfg.DefaultLayout),
	}
	// The effective values where the configuration leaves a default.
	if p.CUDALibrary == "" {
		p.CUDALibrary = gpu.DefaultLibrary
	}
	if p.GPUSocket == "" && cfg.GPU != "off" {
		p.GPUSocket = defaultGPUSocket(cfg)
	}
	for _, t := range cfg.Tiers {
		pt := printedTier{Kind: t.Kind, Dir: t.Dir, DirectIO: t.DirectIO}
		if t.Size > 0 {
			pt.Size = exactSize(t.Size)
		}
		if t.Timeout > 0 {
			pt.Timeout = t.Timeout.String()
		}
		p.Tiers = append(p.Tiers, pt)
	}
	out, err := yaml.Marshal(p)
	if err != nil {
		return err
	}
	head := "# the effective ucmfs configuration: ucmfs mount --config FILE MOUNTPOINT\n"
	if cfg.Mountpoint != "" {
		head = fmt.Sprintf("# the effective ucmfs configuration for %s: ucmfs mount --config FILE %s\n", cfg.Mountpoint, cfg.Mountpoint)
	}
	_, err = io.WriteString(w, head+string(out))
	return err
}

// exactSize writes n bytes with the largest binary unit that divides it:
// "1GiB", "512MiB", "1000" (parseSize reads it back exactly).
func exactSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.name)
		}
	}
	return fmt.Sprint(n)
}

// reprString is the text form of a sidecar setting (fs.ParseReprSetting's
// input); the zero setting is mean.
func reprString(r store.ReprSetting) string {
	switch {
	case r.Off:
		return "none"
	case r.Param != 0 && (r.Kind == format.ReprMerged || r.Kind == format.ReprSignHash):
		return fmt.Sprintf("%s:%d", r.Kind, r.Param)
	}
	return r.Kind.String()
}
