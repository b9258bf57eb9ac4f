package main

import (
	"strings"
	"testing"
)

// TestNotAMountMessages: every command that takes MOUNTPOINT says the
// same of a directory that is no ucmfs mount, and prints nothing else.
func TestNotAMountMessages(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"stats", dir}, {"top", dir}, {"quota", dir, "m"}, {"quota", dir, "m", "1GiB"},
		{"warmup", dir, "m"}, {"warmup", dir, "m", "00112233445566778899aabbccddeeff"},
	} {
		code, out, errs := runMain(t, args...)
		if code == 0 || out != "" || !strings.Contains(errs, dir+" is not a ucmfs mount") {
			t.Errorf("%v: status %d, stdout %q, stderr %q; want the one message", args, code, out, errs)
		}
	}
}

// TestCompletionShells: a shell with no script is a usage error that
// lists the shells; the help says bash needs bash-completion.
func TestCompletionShells(t *testing.T) {
	code, out, errs := runMain(t, "completion", "tcsh")
	if code != exitUsage || out != "" || !strings.Contains(errs, `no script for "tcsh"; the shells are bash, zsh, fish, pwsh`) {
		t.Errorf("completion tcsh: %d %q %q", code, out, errs)
	}
	if code, out, _ := runMain(t, "completion", "bash"); code != 0 || !strings.Contains(out, "bash") {
		t.Errorf("completion bash: %d %q", code, out)
	}
	if _, out, _ := runMain(t, "completion", "--help"); !strings.Contains(out, "bash-completion package") {
		t.Errorf("completion --help does not name bash-completion:\n%s", out)
	}
}

// TestHelperUnknownOptionListsOnce: the mount helper's message lists
// each option once (log_file is the helper's and a mount flag).
func TestHelperUnknownOptionListsOnce(t *testing.T) {
	_, err := parseHelperArgs([]string{"ucmfs", "/mnt/kv", "-o", "bogus=1"})
	if err == nil || strings.Count(err.Error(), "log_file") != 1 {
		t.Errorf("unknown option: %v", err)
	}
}
