package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"0": 0, "4096": 4096, "512MiB": 512 << 20, "1GiB": 1 << 30, "10G": 10 << 30,
		"1.5g": 3 << 29, "100MB": 100e6, "2 TiB": 2 << 40, "64k": 64 << 10, "7b": 7,
	}
	for in, want := range good {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "1X", "-1", "1..2G", "99999999999T", "1GiBs"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1 << 30: "1.0 GiB", 3 << 29: "1.5 GiB", 5 << 40: "5.0 TiB",
	} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseTierSpec(t *testing.T) {
	cases := map[string]tierSpec{
		"nvme:/data/kv":          {Kind: "nvme", Dir: "/data/kv"},
		"nfs:/mnt/nfs/kv:2TiB":   {Kind: "nfs", Dir: "/mnt/nfs/kv", Size: 2 << 40},
		"ds3fs:/3fs/a:b":         {Kind: "ds3fs", Dir: "/3fs/a:b"},
		"nvme:/x:y:10G":          {Kind: "nvme", Dir: "/x:y", Size: 10 << 30},
		"nvme:relative/dir:512M": {Kind: "nvme", Dir: "relative/dir", Size: 512 << 20},
	}
	for in, want := range cases {
		if got, err := parseTierSpec(in); err != nil || got != want {
			t.Errorf("parseTierSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"nvme", "nvme:", ""} {
		if _, err := parseTierSpec(in); err == nil {
			t.Errorf("parseTierSpec(%q): want an error", in)
		}
	}
}

func writeTemp(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	p := writeTemp(t, dir, "ucmfs.yaml", `
memory: 8GiB
memory_dir: /dev/shm
tiers:
  - {kind: nvme, dir: /nvme/kv, size: 100G}
  - kind: nfs
    dir: /shared/kv
    direct_io: true
    timeout: 5s
write_through: true
allow_other: true
passthrough: false
negative_ttl: 250ms
entry_ttl: 10m
max_file_size: 64MiB
log_level: debug
shutdown_timeout: 1m
gpu: sim
dirty_limit: 2GiB
dirty_background: 512MiB
dirty_expire: 5s
`)
	fc, err := loadConfigFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultMountConfig()
	if err := fc.apply(&cfg); err != nil {
		t.Fatal(err)
	}
	want := mountConfig{
		Memory: 8 << 30, MemoryDir: "/dev/shm", WriteThrough: true, AllowOther: true,
		Tiers:    []tierSpec{{Kind: "nvme", Dir: "/nvme/kv", Size: 100 << 30}, {Kind: "nfs", Dir: "/shared/kv", DirectIO: new(true), Timeout: 5 * time.Second}},
		EntryTTL: 10 * time.Minute, NegativeTTL: 250 * time.Millisecond, MaxFileSize: 64 << 20, FUSETransport: "auto", MaxModelsUser: store.DefaultMaxModelsPerUser, MaxDirs: store.DefaultMaxDirs, MaxFiles: tiers.DefaultMaxFiles, EventsWindow: 1 << 16,
		LogLevel: slog.LevelDebug, LogFormat: "text", ShutdownTimeout: time.Minute, GPU: "sim",
		DirtyLimit: 2 << 30, DirtyBackground: 512 << 20, DirtyExpire: 5 * time.Second,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config\n got %+v\nwant %+v", cfg, want)
	}

	// An empty file is all defaults; "tiers: []" is memory only.
	fc, err = loadConfigFile(writeTemp(t, dir, "empty.yaml", ""))
	if err != nil {
		t.Fatalf("empty file: %v", err)
	}
	cfg = defaultMountConfig()
	if fc.apply(&cfg); !reflect.DeepEqual(cfg, defaultMountConfig()) {
		t.Errorf("empty file changed the defaults: %+v", cfg)
	}
	fc, _ = loadConfigFile(writeTemp(t, dir, "memonly.yaml", "tiers: []\n"))
	if fc.apply(&cfg); cfg.Tiers == nil || len(cfg.Tiers) != 0 {
		t.Errorf("tiers: [] gave %#v, want an empty non-nil list", cfg.Tiers)
	}

	for name, text := range map[string]string{
		"typo.yaml":     "memroy: 1GiB\n",
		"badsize.yaml":  "memory: lots\n",
		"badlevel.yaml": "log_level: loud\n",
		"badtier.yaml":  "tiers: [{kind: nvme}]\n",
		"badttl.yaml":   "negative_ttl: soon\n",
	} {
		fc, err := loadConfigFile(writeTemp(t, dir, name, text))
		if err == nil {
			cfg := defaultMountConfig()
			err = fc.apply(&cfg)
		}
		if err == nil {
			t.Errorf("%s (%q): want an error", name, text)
		}
	}
	if _, err := loadConfigFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file: want an error")
	}
}

func TestResolve(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	cfg := defaultMountConfig()
	cfg.Mountpoint = "mnt"
	if err := cfg.resolve(false); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, "mnt"); cfg.Mountpoint != want {
		t.Errorf("mount point %q, want %q", cfg.Mountpoint, want)
	}
	if want := []tierSpec{{Kind: "nvme", Dir: filepath.Join(cache, "ucmfs", "nvme")}}; !reflect.DeepEqual(cfg.Tiers, want) {
		t.Errorf("default tiers %+v, want %+v", cfg.Tiers, want)
	}

	mem := defaultMountConfig()
	mem.Mountpoint = "/m"
	if err := mem.resolve(true); err != nil || len(mem.Tiers) != 0 {
		t.Errorf("memory only: tiers %+v, err %v", mem.Tiers, err)
	}

	bad := map[string]func(c *mountConfig){
		"zero memory":    func(c *mountConfig) { c.Memory = 0 },
		"bad kind":       func(c *mountConfig) { c.Tiers = []tierSpec{{Kind: "s3", Dir: "/s3"}} },
		"duplicate dir":  func(c *mountConfig) { c.Tiers = []tierSpec{{Kind: "nvme", Dir: "/a"}, {Kind: "nfs", Dir: "/a/"}} },
		"tier in mount":  func(c *mountConfig) { c.Tiers = []tierSpec{{Kind: "nvme", Dir: "/m/kv"}} },
		"mount in tier":  func(c *mountConfig) { c.Tiers = []tierSpec{{Kind: "nvme", Dir: "/"}} },
		"negative ttl":   func(c *mountConfig) { c.NegativeTTL = -time.Second },
		"zero shutdown":  func(c *mountConfig) { c.ShutdownTimeout = 0 },
		"zero file size": func(c *mountConfig) { c.MaxFileSize = 0 },
	}
	for name, mutate := range bad {
		c := defaultMountConfig()
		c.Mountpoint = "/m"
		mutate(&c)
		if err := c.resolve(false); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	if within("/mnt2", "/mnt") || !within("/mnt/a", "/mnt") || !within("/mnt", "/mnt") {
		t.Error("within is wrong about /mnt2, /mnt/a or /mnt under /mnt")
	}
}

// TestDefaultTierWithoutHome: with neither $XDG_CACHE_HOME nor $HOME (the
// mount helper as mount(8) runs it) the default tier is still a
// directory: /var/lib/ucmfs/nvme for root, the user's home otherwise.
func TestDefaultTierWithoutHome(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	dir, err := defaultTierDir()
	if err != nil {
		t.Fatalf("default tier without $HOME: %v", err)
	}
	if os.Geteuid() == 0 && dir != "/var/lib/ucmfs/nvme" {
		t.Errorf("root's default tier without $HOME: %s", dir)
	}
	if !filepath.IsAbs(dir) {
		t.Errorf("default tier %q is not absolute", dir)
	}
}
