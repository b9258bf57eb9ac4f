package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/urfave/cli/v3"
)

// parseMount runs `ucmfs mount ARGS...` with a run function that only
// records the resolved configuration, and returns it with the exit status.
func parseMount(t *testing.T, args ...string) (mountConfig, int, string) {
	t.Helper()
	var got mountConfig
	var stderr bytes.Buffer
	root := &cli.Command{
		Name: "ucmfs", Writer: io.Discard, ErrWriter: &stderr,
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Commands: []*cli.Command{newMountCommand(func(_ context.Context, cfg mountConfig, _ io.Writer) error {
			got = cfg
			return nil
		})},
	}
	setUsageErrors(root)
	code := exitOK
	if err := root.Run(context.Background(), append([]string{"ucmfs", "mount"}, args...)); err != nil {
		code = exitFail
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		}
		stderr.WriteString(err.Error())
	}
	return got, code, stderr.String()
}

func TestMountDefaults(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	cfg, code, msg := parseMount(t, "/mnt/kv")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, msg)
	}
	want := defaultMountConfig()
	want.Mountpoint = "/mnt/kv"
	want.Tiers = []tierSpec{{Kind: "nvme", Dir: filepath.Join(cache, "ucmfs", "nvme")}}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", cfg, want)
	}
	if cfg.Passthrough != (os.Geteuid() == 0) {
		t.Errorf("passthrough %v as uid %d", cfg.Passthrough, os.Geteuid())
	}
}

func TestMountFlagsOverrideConfig(t *testing.T) {
	dir := t.TempDir()
	conf := writeTemp(t, dir, "c.yaml", `
memory: 8GiB
tiers: [{kind: nfs, dir: /shared/kv, size: 1T}]
negative_ttl: 5s
log_level: warn
write_through: false
`)
	cfg, code, msg := parseMount(t, "--config", conf, "--memory", "512MiB",
		"--tier", "nvme:/nvme/a,b:10G", "--tier", "ds3fs:/3fs/kv",
		"--write-through", "--allow-other", "--negative-ttl", "100ms", "--entry-ttl", "2m",
		"--log-level", "debug", "--no-passthrough", "--memory-dir", "/run/shm",
		"--shutdown-timeout", "5s", "--max-file-size", "16M", "--debug", "--gpu", "off",
		"--dirty-limit", "1G", "--dirty-background", "100MiB", "--dirty-expire", "0", "/mnt/kv")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, msg)
	}
	want := mountConfig{
		Mountpoint: "/mnt/kv", Memory: 512 << 20, MemoryDir: "/run/shm",
		Tiers:        []tierSpec{{Kind: "nvme", Dir: "/nvme/a,b", Size: 10 << 30}, {Kind: "ds3fs", Dir: "/3fs/kv"}},
		WriteThrough: true, AllowOther: true, Passthrough: false,
		EntryTTL: 2 * time.Minute, NegativeTTL: 100 * time.Millisecond, MaxFileSize: 16 << 20, FUSETransport: "auto", MaxModelsUser: store.DefaultMaxModelsPerUser, MaxDirs: store.DefaultMaxDirs, MaxFiles: tiers.DefaultMaxFiles, EventsWindow: 1 << 16,
		LogLevel: slog.LevelDebug, LogFormat: "text", Debug: true, ShutdownTimeout: 5 * time.Second, GPU: "off",
		DirtyLimit: 1 << 30, DirtyBackground: 100 << 20,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("flags over file\n got %+v\nwant %+v", cfg, want)
	}

	// Keys the flags leave alone come from the file.
	cfg, code, msg = parseMount(t, "--config", conf, "/mnt/kv")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if cfg.Memory != 8<<30 || cfg.NegativeTTL != 5*time.Second || cfg.LogLevel != slog.LevelWarn ||
		!reflect.DeepEqual(cfg.Tiers, []tierSpec{{Kind: "nfs", Dir: "/shared/kv", Size: 1 << 40}}) {
		t.Errorf("file values not used: %+v", cfg)
	}
}

func TestMountMemoryOnly(t *testing.T) {
	cfg, code, msg := parseMount(t, "--memory-only", "--memory", "64M", "/m")
	if code != exitOK || len(cfg.Tiers) != 0 || cfg.Memory != 64<<20 {
		t.Errorf("memory only: exit %d (%s), config %+v", code, msg, cfg)
	}
}

func TestMountUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no mount point":      {},
		"two mount points":    {"/a", "/b"},
		"bad memory":          {"--memory", "lots", "/m"},
		"bad tier":            {"--tier", "tape:/t", "/m"},
		"tier without dir":    {"--tier", "nvme", "/m"},
		"bad level":           {"--log-level", "chatty", "/m"},
		"bad duration":        {"--negative-ttl", "soon", "/m"},
		"missing config":      {"--config", "/nonexistent/ucmfs.yaml", "/m"},
		"memory-only + tier":  {"--memory-only", "--tier", "nvme:/x", "/m"},
		"unknown flag":        {"--turbo", "/m"},
		"tier inside the mnt": {"--tier", "nvme:/m/cache", "/m"},
		"background > limit":  {"--dirty-background", "2G", "--dirty-limit", "1G", "/m"},
		"negative expiry":     {"--dirty-expire", "-1s", "/m"},
		"bad dirty limit":     {"--dirty-limit", "half", "/m"},
	} {
		if _, code, msg := parseMount(t, args...); code != exitUsage || msg == "" {
			t.Errorf("%s: exit %d (%q), want %d with a message", name, code, msg, exitUsage)
		}
	}
}

// TestMountRefusals runs the real command (no FUSE needed): a mount point
// that is missing, not empty, a file, or already mounted is refused with
// exit status 1 and a message that names the problem.
func TestMountRefusals(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	full := filepath.Join(dir, "full")
	os.Mkdir(full, 0o755)
	writeTemp(t, full, "something", "x")
	file := writeTemp(t, dir, "file", "x")
	for mnt, want := range map[string]string{
		filepath.Join(dir, "missing"): "does not exist",
		full:                          "not empty",
		file:                          "not a directory",
		"/proc":                       "already mounted (proc)",
	} {
		var stderr bytes.Buffer
		code := Main(context.Background(), []string{"ucmfs", "mount", "--memory", "16M", mnt}, io.Discard, &stderr)
		if code != exitFail || !strings.Contains(stderr.String(), want) {
			t.Errorf("mount %s: exit %d, stderr %q; want %d and %q", mnt, code, stderr.String(), exitFail, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cache")); err == nil {
		t.Error("a refused mount created the default tier directory")
	}
}

func TestPrepareTierDir(t *testing.T) {
	dir := t.TempDir()
	nvme := tierSpec{Kind: "nvme", Dir: filepath.Join(dir, "a", "b")}
	if err := prepareTierDir(nvme); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(nvme.Dir); err != nil || !fi.IsDir() {
		t.Errorf("nvme tier directory not created: %v", err)
	}
	nfs := tierSpec{Kind: "nfs", Dir: filepath.Join(dir, "nfs")}
	if err := prepareTierDir(nfs); err == nil {
		t.Error("a missing nfs directory was accepted")
	}
	if _, err := os.Stat(nfs.Dir); err == nil {
		t.Error("a missing nfs directory was created")
	}
	if err := prepareTierDir(tierSpec{Kind: "nvme", Dir: writeTemp(t, dir, "f", "")}); err == nil {
		t.Error("a file was accepted as a tier directory")
	}
}
