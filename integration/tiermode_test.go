package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTierDirectoryPrivate: a tier directory ucmfs makes is 0700 (its
// files are every model's blocks, 0700 models' included), so is each
// model's settings record 0600; a mount with --allow-other over a tier
// directory others can enter says so in a warning.
func TestTierDirectoryPrivate(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	if err := os.Mkdir(d.path("m"), 0o700); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(d.Tier); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the tier directory ucmfs made: %v %v, want 0700", fi.Mode(), err)
	}
	sh(t, "setfattr", "-n", "user.ucm.quota", "-v", "1000000", d.path("m"))
	if fi, err := os.Stat(filepath.Join(d.Tier, "m", ".ucmfs-model.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the settings record: %v %v, want 0600", fi, err)
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}

	open := filepath.Join(testDir(t), "open-tier")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	d = mountUCM(t, mountOpts{Tier: open, Args: []string{"--allow-other"}})
	if out := d.out.String(); !strings.Contains(out, "tier directory other users can enter") {
		t.Errorf("no warning of a 0755 tier directory under --allow-other:\n%s", out)
	}
}
