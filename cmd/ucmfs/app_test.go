package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runMain runs Main in-process and returns its status and output.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), append([]string{"ucmfs"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	code, out, errs := runMain(t, "version")
	if code != 0 || errs != "" || out != "ucmfs "+versionString()+"\n" {
		t.Fatalf("version: %d %q %q", code, out, errs)
	}
	old := version
	version = "v9.8.7"
	defer func() { version = old }()
	if _, out, _ := runMain(t, "version"); out != "ucmfs v9.8.7\n" {
		t.Fatalf("version with ldflags value: %q", out)
	}
	for _, flag := range []string{"--version", "-v"} {
		if code, out, _ := runMain(t, flag); code != 0 || out != "ucmfs v9.8.7\n" {
			t.Fatalf("%s: %d %q", flag, code, out)
		}
	}
	if code, _, _ := runMain(t, "version", "extra"); code != exitUsage {
		t.Fatalf("version with an argument: %d", code)
	}
}

func TestRootUsage(t *testing.T) {
	code, out, _ := runMain(t)
	if code != 0 || !strings.Contains(out, "COMMANDS:") {
		t.Fatalf("no arguments: %d %q", code, out)
	}
	for _, name := range []string{"hash", "inspect", "fsck", "version"} {
		if !strings.Contains(out, "\n   "+name+" ") {
			t.Errorf("help does not list %s:\n%s", name, out)
		}
	}
	if code, out, errs := runMain(t, "frobnicate"); code != exitUsage || out != "" || !strings.Contains(errs, "frobnicate") {
		t.Fatalf("unknown command: %d %q %q", code, out, errs)
	}
	if code, _, errs := runMain(t, "--no-such-flag"); code != exitUsage || !strings.Contains(errs, "no-such-flag") {
		t.Fatalf("unknown root flag: %d %q", code, errs)
	}
	if code, out, _ := runMain(t, "hash", "--help"); code != 0 || !strings.Contains(out, "--block-size") {
		t.Fatalf("hash --help: %d %q", code, out)
	}
}

func TestMountErrorHintsFusermount(t *testing.T) {
	missing := &exec.Error{Name: "/bin/fusermount", Err: exec.ErrNotFound}
	err := mountError("/mnt/kv", fmt.Errorf("wrapped: %w", missing))
	if !strings.Contains(err.Error(), "apt-get install fuse3") || !strings.Contains(err.Error(), "/mnt/kv") {
		t.Errorf("no hint: %v", err)
	}
	other := errors.New("EPERM")
	if err := mountError("/mnt/kv", other); !errors.Is(err, other) || strings.Contains(err.Error(), "fuse3") {
		t.Errorf("another error: %v", err)
	}
}

// TestBrokenPipeQuiet: a command whose reader goes away (ucmfs stats |
// head) ends without an error line about the pipe.
func TestBrokenPipeQuiet(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	var errb bytes.Buffer
	Main(context.Background(), []string{"ucmfs", "version"}, w, &errb)
	w.Close()
	if strings.Contains(errb.String(), "broken pipe") {
		t.Errorf("stderr after the reader went: %q", errb.String())
	}
}
