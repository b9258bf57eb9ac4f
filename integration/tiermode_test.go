package integration

import (
	"os"
	"path/filepath"
	"strconv"
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

// TestTierWriteBackDirect: write-back into an nvme tier uses O_DIRECT by
// default, so a block written back takes no page cache beside its memory
// copy (fincore of the tier file: nothing resident); a tier entry with
// direct_io: false writes through the page cache (the file resident).
func TestTierWriteBackDirect(t *testing.T) {
	requireTool(t, "fincore")
	for _, c := range []struct {
		name   string
		yaml   string // the tier entry's extra keys; "" for --tier
		direct bool
	}{{"default", "", true}, {"direct_io false", ", direct_io: false", false}} {
		t.Run(c.name, func(t *testing.T) {
			var d *daemon
			if c.yaml == "" {
				d = mountUCM(t, mountOpts{})
			} else {
				dir := testDir(t)
				tier := filepath.Join(dir, "tier")
				conf := filepath.Join(dir, "ucmfs.yaml")
				yaml := "memory: 64MiB\nmemory_dir: " + memDir + "\nlog_level: warn\ntiers:\n  - {kind: nvme, dir: " + tier + c.yaml + "}\n"
				if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
					t.Fatal(err)
				}
				d = mountUCM(t, mountOpts{Bare: true, Tier: tier, Args: []string{"--config", conf}})
			}
			if err := os.Mkdir(d.path("m"), 0o755); err != nil {
				t.Fatal(err)
			}
			sh(t, "setfattr", "-n", "user.ucm.layout", "-v", "files", d.path("m"))
			sh(t, "dd", "if=/dev/urandom", "of="+d.path("m", "f"), "bs=1M", "count=4", "status=none")
			if out := mustPy(t, "flush", d.Mnt, "m"); out != "flushed\n" {
				t.Fatalf("flush: %q", out)
			}
			tierFile := filepath.Join(d.Tier, "m", "f")
			res, err := strconv.ParseInt(strings.TrimSpace(sh(t, "fincore", "--bytes", "--noheadings", "--output", "RES", tierFile)), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if c.direct && res >= 1<<20 {
				t.Errorf("the tier file has %d bytes in the page cache after an O_DIRECT write-back, want (almost) none", res)
			}
			if !c.direct && res < 3<<20 {
				t.Errorf("the tier file has %d bytes in the page cache after a buffered write-back, want its 4 MiB", res)
			}
			if got, want := sh(t, "cmp", tierFile, d.path("m", "f")), ""; got != want {
				t.Errorf("the tier file differs from the mount's: %q", got)
			}
		})
	}
}
