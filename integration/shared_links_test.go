package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSharedTierLinkNotFollowed: a host (or anyone) writing the share
// plants a link <share>/mal/x -> a root-only directory of this host. A
// second local user who may write the files model mal then tries,
// through the mount, what the link would give her with the daemon's
// root rights: overwrite the root-only file behind it, create and
// remove files there, list it, make a directory in it (a mkdir goes to
// every directory tier, the nvme one first). Nothing outside the tiers
// changes, the link is never listed, and the daemon reports it (log
// line, links_refused in .ucm/stats).
func TestSharedTierLinkNotFollowed(t *testing.T) {
	u := newLocalUser(t)
	dir, o := sharedMountOpts(t)
	share := filepath.Join(dir, "share")
	if err := os.Mkdir(share, 0o755); err != nil {
		t.Fatal(err)
	}
	o.Bare = true
	args := append(o.Args, "--memory", "64MiB", "--memory-dir", memDir, "--log-level", "warn", "--negative-ttl", sharedTTL.String())
	shareOnly := o
	shareOnly.Args = append(slices.Clone(args), "--tier", "nfs:"+share)
	nvmeFirst := o
	nvmeFirst.Args = append(slices.Clone(args), "--tier", "nvme:"+o.Tier, "--tier", "nfs:"+share)

	// The root-only directory the link points at.
	secret := filepath.Join(testDir(t), "root-only")
	if err := os.MkdirAll(filepath.Join(secret, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "secret.txt"), []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := listing(t, secret)

	d := mountUCM(t, shareOnly)
	m := d.path("mal")
	u.must(t, "mkdir "+m+` && python3 -c "import os; os.setxattr('`+m+`', 'user.ucm.layout', b'files')"`)
	u.must(t, "echo mine > "+m+"/own.txt")
	flushAll(t, d)
	if _, err := os.Stat(filepath.Join(share, "mal", "own.txt")); err != nil {
		t.Fatalf("the share does not hold the model's file: %v", err)
	}
	if err := os.Symlink(secret, filepath.Join(share, "mal", "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(secret, "secret.txt"), filepath.Join(share, "mal", "s.txt")); err != nil {
		t.Fatal(err)
	}

	// What she tries, on the share alone and with an nvme tier first;
	// each may fail or seem to work: what counts is the directory behind
	// the link afterwards.
	x := filepath.Join(m, "x")
	attempts := []string{
		"cat " + x + "/secret.txt",
		"echo hers > " + x + "/secret.txt",
		"echo hers > " + m + "/s.txt",
		"echo evil > " + x + "/evil.txt",
		"rm -f " + x + "/secret.txt",
		"ls " + x,
		"mkdir " + x + "/made",
		"mkdir -p " + x + "/sub/deeper",
		"mv " + m + "/own.txt " + x + "/moved.txt",
		"rm -rf " + x + "/sub",
	}
	var logs strings.Builder
	for i, opts := range []mountOpts{shareOnly, nvmeFirst} {
		if i > 0 {
			d = mountUCM(t, opts)
		}
		for _, script := range attempts {
			u.run(script)
		}
		flushAll(t, d)
		if code := d.stop(); code != 0 {
			t.Fatalf("stop: exit %d", code)
		}
		logs.WriteString(d.out.String())
		if after := listing(t, secret); !slices.Equal(before, after) {
			t.Errorf("mount %d: the root-only directory behind the link changed:\nbefore %v\nafter  %v", i, before, after)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(secret, "secret.txt")); string(b) != "root's\n" {
		t.Errorf("the root-only file now holds %q", b)
	}
	if !strings.Contains(logs.String(), "symbolic link in the tier directory is never followed") {
		t.Errorf("no log line of the refused link:\n%s", logs.String())
	}

	// Mounted again: the link is never listed, and the refusals are
	// counted.
	d = mountUCM(t, shareOnly)
	ents, err := os.ReadDir(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "x" {
			t.Errorf("the planted link %s is listed in the model", e.Name())
		}
	}
	// Her write of s.txt replaced the link on the share with her file
	// (a rename replaces a link itself): she reads her own bytes there.
	if b, err := os.ReadFile(filepath.Join(m, "s.txt")); err == nil && string(b) != "hers\n" {
		t.Errorf("s.txt reads %q through the mount", b)
	}
	if _, err := os.Stat(filepath.Join(x, "secret.txt")); err == nil {
		t.Errorf("the root-only file is reachable through the mount")
	}
	var st struct {
		Tiers []struct {
			Name         string `json:"name"`
			LinksRefused int64  `json:"links_refused"`
		} `json:"tiers"`
	}
	b, err := os.ReadFile(d.path(".ucm", "stats"))
	if err != nil || json.Unmarshal(b, &st) != nil {
		t.Fatalf("stats: %v", err)
	}
	refused := int64(0)
	for _, tier := range st.Tiers {
		if tier.Name == "nfs" {
			refused = tier.LinksRefused
		}
	}
	if refused == 0 {
		t.Errorf("the nfs tier counts no refused link: %s", b)
	}
}

// listing is every path under dir with its mode and size, sorted.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, strings.TrimPrefix(p, dir)+" "+fi.Mode().String()+" "+strings.Repeat("#", int(min(fi.Size(), 64))))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestSharedLinkAsModel: a link planted on the share at a model's name
// is never followed by a mkdir of that model: either the mkdir makes the
// model's directory in the link's place (the link itself removed, as
// where any directory of the layout goes) or it fails and leaves no
// model behind (not listed, nobody's); nothing behind the link changes.
func TestSharedLinkAsModel(t *testing.T) {
	u := newLocalUser(t)
	dir, o := sharedMountOpts(t)
	share := filepath.Join(dir, "share")
	elsewhere := filepath.Join(testDir(t), "elsewhere")
	for _, d := range []string{share, elsewhere} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(elsewhere, filepath.Join(share, "evilmodel")); err != nil {
		t.Fatal(err)
	}
	o.Bare = true
	o.Args = append(o.Args, "--memory", "64MiB", "--memory-dir", memDir, "--log-level", "warn",
		"--tier", "nfs:"+share, "--negative-ttl", sharedTTL.String())
	d := mountUCM(t, o)
	_, mkErr := u.run("mkdir " + d.path("evilmodel"))
	listed := false
	ents, err := os.ReadDir(d.Mnt)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		listed = listed || e.Name() == "evilmodel"
	}
	switch st, err := os.Lstat(filepath.Join(share, "evilmodel")); {
	case mkErr == nil && (err != nil || !st.IsDir()):
		t.Errorf("the model was made, but the share holds at its name: %v %v", st, err)
	case mkErr != nil && listed:
		t.Errorf("a failed mkdir left the model listed")
	}
	u.must(t, "mkdir "+d.path("goodmodel"))
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("the directory behind the link now holds %v", ents)
	}
}
