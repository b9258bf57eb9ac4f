package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/gpu"
	"go.yaml.in/yaml/v3"
)

func TestConfigErrorsNameLinesAndKeys(t *testing.T) {
	dir := t.TempDir()
	for text, want := range map[string][]string{
		"memory: 1GiB\nmemroy: 2GiB\n":        {"typo.yaml:2: unknown key \"memroy\" (did you mean memory? valid keys: memory, memory_dir, tiers,"},
		"frobnicate: 1\n":                     {"typo.yaml:1: unknown key \"frobnicate\" (valid keys: memory,"},
		"tiers:\n  - {kind: nvme, dri: /x}\n": {"typo.yaml:2: tiers[0]: unknown key \"dri\" (did you mean dir? valid keys: kind, dir, size, direct_io, timeout)"},
		"negative_ttl: soon\nwrite_through: maybe\n": {
			"typo.yaml:1: negative_ttl: want a duration such as 250ms, 30s or 1h, got \"soon\"",
			"typo.yaml:2: write_through: want true or false, got \"maybe\""},
		"\n\nmemory: lots\n":              {"typo.yaml:3: memory: size \"lots\""},
		"tiers: nvme\n":                   {"typo.yaml:1: tiers: want a list of tiers"},
		"- memory\n":                      {"typo.yaml:1: want a mapping of keys"},
		"log_level: loud\n":               {"typo.yaml:1: log_level: log level \"loud\""},
		"a: 1\n\ntiers: [{kind: nvme}]\n": {"typo.yaml:1: unknown key \"a\""},
		"tiers:\n  - {kind: nfs, dir: /x, timeout: 0s}\n": {"typo.yaml:2: tiers[0].timeout: want a duration > 0 such as 5s, got 0s"},
		"tiers:\n  - {kind: nvme, dir: t6, size: 10XB}\n": {"typo.yaml:2: tiers[0].size: size \"10XB\""},
		"tiers:\n  - {size: 10XB, kind: nvme, dir: t6}\n": {"typo.yaml:2: tiers[0].size: size \"10XB\""},
		"write_through: \"true\"\n":                       {"typo.yaml:1: write_through: want true or false, got the string \"true\" (quotes make it a string: write true)"},
	} {
		path := writeTemp(t, dir, "typo.yaml", text)
		fc, err := loadConfigFile(path)
		if err == nil {
			cfg := defaultMountConfig()
			err = fc.apply(&cfg)
		}
		if err == nil {
			t.Errorf("%q: no error", text)
			continue
		}
		msg := strings.ReplaceAll(err.Error(), path, "typo.yaml")
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q:\n got %s\nwant %s", text, msg, w)
			}
		}
		if strings.Contains(msg, "main.") || strings.Contains(msg, "fileConfig") || strings.Contains(msg, "!!") {
			t.Errorf("%q: a Go type in %s", text, msg)
		}
	}
}

func TestConfigRelativePaths(t *testing.T) {
	dir := t.TempDir()
	path := writeTemp(t, dir, "ucmfs.yaml", "memory_dir: shm\ntiers:\n  - {kind: nvme, dir: kv/nvme}\n  - {kind: nfs, dir: /abs/nfs}\n")
	t.Chdir(t.TempDir()) // the working directory must not matter
	fc, err := loadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaultMountConfig()
	if err := fc.apply(&cfg); err != nil {
		t.Fatal(err)
	}
	want := []tierSpec{{Kind: "nvme", Dir: filepath.Join(dir, "kv/nvme")}, {Kind: "nfs", Dir: "/abs/nfs"}}
	if !reflect.DeepEqual(cfg.Tiers, want) || cfg.MemoryDir != filepath.Join(dir, "shm") {
		t.Errorf("tiers %+v memory_dir %s; want %+v and %s", cfg.Tiers, cfg.MemoryDir, want, filepath.Join(dir, "shm"))
	}
}

func TestPrintConfigRoundTrip(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	dir := t.TempDir()
	cfgFile := writeTemp(t, dir, "in.yaml", "memory: 3GiB\ntiers: [{kind: nvme, dir: tier, size: 1000, direct_io: false, timeout: 5s}]\nrepr_kind: merged:4\n")
	args := []string{"ucmfs", "mount", "--config", cfgFile, "--log-format", "json", "--negative-ttl", "250ms",
		"--allow-other", "--metrics-addr", "127.0.0.1:9105", "--print-config", "/mnt/kv"}
	var out bytes.Buffer
	if code := Main(context.Background(), args, &out, io.Discard); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, w := range []string{"memory: 3GiB\n", "dir: " + filepath.Join(dir, "tier") + "\n", "size: \"1000\"\n", "direct_io: false\n", "timeout: 5s\n",
		"log_format: json\n", "negative_ttl: 250ms\n", "repr_kind: merged:4\n", "allow_other: true\n",
		"cuda_library: " + gpu.DefaultLibrary + "\n", "gpu_socket: " + defaultGPUSocket(mountConfig{Mountpoint: "/mnt/kv"}) + "\n",
		"kernel_nodes: 0\n", "fuse_transport: auto\n"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("--print-config lacks %q:\n%s", w, out.String())
		}
	}
	// Fed back as the config, it gives the same configuration.
	printed := writeTemp(t, dir, "printed.yaml", out.String())
	var got, want mountConfig
	record := func(dst *mountConfig) func(context.Context, mountConfig, io.Writer) error {
		return func(_ context.Context, cfg mountConfig, _ io.Writer) error { *dst = cfg; return nil }
	}
	if err := newMountCommand(record(&want)).Run(context.Background(), []string{"mount", "--config", cfgFile, "--log-format", "json",
		"--negative-ttl", "250ms", "--allow-other", "--metrics-addr", "127.0.0.1:9105", "/mnt/kv"}); err != nil {
		t.Fatal(err)
	}
	if err := newMountCommand(record(&got)).Run(context.Background(), []string{"mount", "--config", printed, "/mnt/kv"}); err != nil {
		t.Fatal(err)
	}
	// The printed file names the effective values of the defaults (the
	// CUDA library, the GPU socket of this mount point) explicitly.
	want.CUDALibrary, want.GPUSocket = gpu.DefaultLibrary, defaultGPUSocket(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("printed config read back\n got %+v\nwant %+v", got, want)
	}
	// Without a mount point it prints too.
	if code, out, _ := runMain(t, "mount", "--print-config"); code != 0 || !strings.Contains(out, "tiers:\n") {
		t.Errorf("--print-config alone: %d\n%s", code, out)
	}
}

// TestSampleConfig: deploy/ucmfs.yaml, the commented sample, loads, and
// --print-config of it gives every key with the value the file has: its
// values are the effective defaults it says they are.
func TestSampleConfig(t *testing.T) {
	sample := filepath.Join("..", "..", "deploy", "ucmfs.yaml")
	code, out, errs := runMain(t, "mount", "--config", sample, "--print-config", "/mnt/kv")
	if code != 0 {
		t.Fatalf("--print-config of the sample: exit %d: %s", code, errs)
	}
	raw, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	if err := yaml.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // the sample is root's: its socket and passthrough defaults
		delete(want, "gpu_socket")
		delete(got, "gpu_socket")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("--print-config of deploy/ucmfs.yaml differs from it:\n%s", out)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("the sample lacks the key %q", k)
		}
	}
}
