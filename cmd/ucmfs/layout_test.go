package main

import (
	"testing"

	"github.com/ucmfs/ucmfs/layout/posix"
)

// TestDefaultLayout: --default-layout and the default_layout key choose
// the layout of new models (ucmb by default, the flag over the file); an
// unknown layout is a usage error.
func TestDefaultLayout(t *testing.T) {
	if cfg, code, msg := parseMount(t, "--memory-only", "/m"); code != exitOK || cfg.DefaultLayout != "" {
		t.Errorf("default: exit %d (%s), layout %q", code, msg, cfg.DefaultLayout)
	}
	conf := writeTemp(t, t.TempDir(), "c.yaml", "default_layout: ucm-posix\n")
	if cfg, code, msg := parseMount(t, "--config", conf, "--memory-only", "/m"); code != exitOK || cfg.DefaultLayout != posix.Name {
		t.Errorf("from the file: exit %d (%s), layout %q", code, msg, cfg.DefaultLayout)
	}
	if cfg, code, msg := parseMount(t, "--config", conf, "--default-layout", "ucmb", "--memory-only", "/m"); code != exitOK || cfg.DefaultLayout != "" {
		t.Errorf("flag over the file: exit %d (%s), layout %q", code, msg, cfg.DefaultLayout)
	}
	if _, code, msg := parseMount(t, "--default-layout", "posix", "--memory-only", "/m"); code != exitUsage || msg == "" {
		t.Errorf("bad layout: exit %d (%q), want %d", code, msg, exitUsage)
	}
	bad := writeTemp(t, t.TempDir(), "bad.yaml", "default_layout: ucm\n")
	if _, code, _ := parseMount(t, "--config", bad, "--memory-only", "/m"); code != exitUsage {
		t.Errorf("bad default_layout in the file: exit %d, want %d", code, exitUsage)
	}
}
