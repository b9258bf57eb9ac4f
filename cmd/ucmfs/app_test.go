package main

import (
	"bytes"
	"context"
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
