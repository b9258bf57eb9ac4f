package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseHelperArgs(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ucmfs.yaml")
	os.WriteFile(cfg, []byte("memory: 1GiB\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want []string
		log  string
		fake bool
	}{
		{[]string{"ucmfs", "/mnt/kv"}, []string{"/mnt/kv"}, "", false},
		{[]string{"ucmfs", "/mnt/kv", "-o", "rw,nosuid,nodev,noatime,_netdev,nofail,x-systemd.automount,defaults"},
			[]string{"/mnt/kv"}, "", false},
		{[]string{"ucmfs", "/mnt/kv", "-o", "memory=8GiB,tier=nvme:/a,tier=nfs:/b:1T,allow_other,log_level=warn", "-o", "memory_only=false"},
			[]string{"--memory", "8GiB", "--tier", "nvme:/a", "--tier", "nfs:/b:1T", "--allow-other", "--log-level", "warn",
				"--memory-only=false", "/mnt/kv"}, "", false},
		{[]string{"-sfnv", "ucmfs", "/mnt/kv", "-owrite_through,log_file=/var/log/x.log", "-t", "fuse.ucmfs"},
			[]string{"--write-through", "/mnt/kv"}, "/var/log/x.log", true},
		{[]string{cfg, "/mnt/kv", "-o", "metrics_addr=127.0.0.1:0"},
			[]string{"--config", cfg, "--metrics-addr", "127.0.0.1:0", "/mnt/kv"}, "", false},
	} {
		req, err := parseHelperArgs(tc.args)
		if err != nil || !slices.Equal(req.MountArgs, tc.want) || req.LogFile != tc.log || req.Fake != tc.fake {
			t.Errorf("%q: %+v, %v; want %q", tc.args, req, err, tc.want)
		}
	}
	for args, want := range map[string]string{
		"ucmfs /mnt/kv -o memroy=1G":    "memroy\"; ucmfs options: allow_other,",
		"ucmfs /mnt/kv -o ro":           "read-only",
		"ucmfs /mnt/kv -o memory":       "needs a value",
		"ucmfs":                         "SOURCE MOUNTPOINT",
		"ucmfs /mnt/kv -x":              "-x",
		"ucmfs /mnt/kv -o":              "needs a value",
		"ucmfs /mnt/kv extra -o rw,dev": "got 3 arguments",
	} {
		if _, err := parseHelperArgs(strings.Fields(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", args, err, want)
		}
	}
}

func TestMountHelperChecksBeforeStarting(t *testing.T) {
	var errb bytes.Buffer
	code := Main(context.Background(), []string{"/sbin/mount.fuse.ucmfs", "ucmfs", t.TempDir(), "-o", "memory=lots"}, &errb, &errb)
	if code != 1 || !strings.Contains(errb.String(), "--memory") {
		t.Errorf("bad size: %d %q", code, errb.String())
	}
	errb.Reset()
	code = Main(context.Background(), []string{"mount.fuse.ucmfs", "ucmfs", t.TempDir(), "-f", "-o", "memory=1G,rw"}, &errb, &errb)
	if code != 0 || errb.Len() != 0 {
		t.Errorf("fake mount: %d %q", code, errb.String())
	}
}

func TestManPage(t *testing.T) {
	code, out, _ := runMain(t, "man")
	if code != 0 || !strings.HasPrefix(out, ".TH UCMFS 8") {
		t.Fatalf("man: %d %.80q", code, out)
	}
	for _, want := range []string{`.SS "ucmfs mount MOUNTPOINT"`, `.B \-\-memory`, `.SS "ucmfs umount MOUNTPOINT"`, "MOUNT HELPER"} {
		if !strings.Contains(out, want) {
			t.Errorf("man page lacks %q", want)
		}
	}
	if strings.Contains(out, `.SS "ucmfs man`) {
		t.Error("the hidden man command is in the man page")
	}
}

// TestHelperRelativeSource: a relative SOURCE is never read as a config
// file, whatever the current directory holds.
func TestHelperRelativeSource(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(filepath.Join(dir, "ucmfs"), []byte("\x00\x01binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	req, err := parseHelperArgs([]string{"ucmfs", "/mnt/x", "-o", "memory=1GiB"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(req.MountArgs, "--config") {
		t.Errorf("a relative source was taken as the config: %v", req.MountArgs)
	}
}
