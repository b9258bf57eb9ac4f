package main

import (
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/store"
)

// TestReprSetting: --repr-kind and the repr_kind key choose the sidecar
// kind derived (mean by default, the flag over the file); a kind that
// does not parse is a usage error.
func TestReprSetting(t *testing.T) {
	if cfg, code, msg := parseMount(t, "--memory-only", "/m"); code != exitOK || cfg.Repr != (store.ReprSetting{}) || cfg.Repr.String() != "mean" {
		t.Errorf("default: exit %d (%s), repr %+v", code, msg, cfg.Repr)
	}
	conf := writeTemp(t, t.TempDir(), "c.yaml", "repr_kind: signhash:256\n")
	want := store.ReprSetting{Kind: format.ReprSignHash, Param: 256}
	if cfg, code, msg := parseMount(t, "--config", conf, "--memory-only", "/m"); code != exitOK || cfg.Repr != want {
		t.Errorf("from the file: exit %d (%s), repr %+v, want %+v", code, msg, cfg.Repr, want)
	}
	want = store.ReprSetting{Kind: format.ReprMerged, Param: 8}
	if cfg, code, msg := parseMount(t, "--config", conf, "--repr-kind", "merged:8", "--memory-only", "/m"); code != exitOK || cfg.Repr != want {
		t.Errorf("flag over the file: exit %d (%s), repr %+v, want %+v", code, msg, cfg.Repr, want)
	}
	if cfg, code, msg := parseMount(t, "--repr-kind", "none", "--memory-only", "/m"); code != exitOK || !cfg.Repr.Off {
		t.Errorf("none: exit %d (%s), repr %+v", code, msg, cfg.Repr)
	}
	for _, bad := range []string{"median", "mean:2", "merged:0", "signhash:12", "signhash:x"} {
		if _, code, msg := parseMount(t, "--repr-kind", bad, "--memory-only", "/m"); code != exitUsage || msg == "" {
			t.Errorf("--repr-kind %s: exit %d (%q), want %d", bad, code, msg, exitUsage)
		}
	}
	badConf := writeTemp(t, t.TempDir(), "bad.yaml", "repr_kind: median\n")
	if _, code, _ := parseMount(t, "--config", badConf, "--memory-only", "/m"); code != exitUsage {
		t.Errorf("bad repr_kind in the file: exit %d, want %d", code, exitUsage)
	}
}
