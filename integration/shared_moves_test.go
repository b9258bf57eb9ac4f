package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSharedForgedMoves: a settings record on the share is anyone's who
// writes the share. A "moves" record planted in one model's record (the
// directory moves a crash cut short, finished at the next start) whose
// paths point outside the model or the tier (another model, "..", an
// absolute path, a path not clean) moves
// nothing at the next start: every file stays where it was, each record
// is refused, with one log line for the record, and left out of it the
// next time this host writes it; so are its pinned directories outside
// the model. A move within the model, by clean
// paths, is finished as this host's own would be.
func TestSharedForgedMoves(t *testing.T) {
	share := sharedDir(t)
	o := sharedMount("nfs:" + share)
	d := mountUCM(t, o)
	files := map[string]string{"victim/d/f.bin": "victim's", "evil/a/x.bin": "evil's a", "evil/b/y.bin": "evil's b"}
	for _, m := range []string{"victim", "evil"} {
		filesModel(t, d, m)
	}
	for _, dir := range []string{"victim/d", "evil/a", "evil/b"} {
		if err := os.Mkdir(d.path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, body := range files {
		if err := os.WriteFile(d.path(p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flushAll(t, d)
	if code := d.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}

	// What a host writing the share plants: records reaching another
	// model and a directory outside the tier.
	outside := filepath.Join(testDir(t), "outside")
	if err := os.MkdirAll(filepath.Join(outside, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "sub", "secret.bin")
	if err := os.WriteFile(secret, []byte("not the tier's"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(filepath.Join(share, "evil"), outside)
	forged := []map[string]any{
		{"from": "a", "to_model": "victim", "to": "stolen"},          // into another model
		{"from": "../victim/d", "to_model": "evil", "to": "got"},     // out of the model by ..
		{"from": "a", "to_model": "evil", "to": "../victim/planted"}, // into another model by ..
		{"from": "a", "to_model": "evil", "to": rel},                 // out of the tier by ..
		{"from": outside, "to_model": "evil", "to": "abs"},           // an absolute path
		{"from": "a", "to_model": "evil", "to": "./a2"},              // not clean
		{"from": "a\x00b", "to_model": "evil", "to": "nul"},          // a NUL
		{"from": "a", "to_model": "../victim", "to": "m"},            // no model name
	}
	valid := map[string]any{"from": "b", "to_model": "evil", "to": "c"}
	rec := filepath.Join(share, "evil", ".ucmfs-model.json")
	editRecord(t, rec, func(v map[string]any) {
		v["moves"] = append(forged, valid)
		v["pinned_dirs"] = []string{"a", "../victim/d", "/etc", "a/../../victim"}
	})

	d = mountUCM(t, o)
	for p, body := range files {
		if p == "evil/b/y.bin" {
			p = "evil/c/y.bin" // the valid record's move
		}
		if got, err := os.ReadFile(d.path(p)); err != nil || string(got) != body {
			t.Errorf("%s after the start: %q, %v; want %q", p, got, err, body)
		}
	}
	for _, p := range []string{"victim/stolen", "victim/planted", "evil/got", "evil/abs", "evil/a2", "evil/b"} {
		if _, err := os.Stat(d.path(p)); !os.IsNotExist(err) {
			t.Errorf("%s after the start: %v, want none", p, err)
		}
	}
	if got, err := os.ReadFile(secret); err != nil || string(got) != "not the tier's" {
		t.Errorf("the file outside the tier: %q, %v", got, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(outside))
	if len(ents) != 1 {
		t.Errorf("beside the directory outside the tier: %d entries, want it alone", len(ents))
	}
	if n, want := strings.Count(d.out.String(), "directory move record refused"), "refused="+strconv.Itoa(len(forged)); n != 1 || !strings.Contains(d.out.String(), want) {
		t.Errorf("%d lines refusing the record in the log, want one with %s:\n%s", n, want, d.out.String())
	}
	if n := strings.Count(d.out.String(), "pinned directories of the record refused"); n != 1 || !strings.Contains(d.out.String(), "refused=3") {
		t.Errorf("%d lines refusing the record's pinned directories, want one with refused=3", n)
	}
	if pin, err := getxattr(d.path("evil", "a"), "user.ucm.pinned"); err != nil || pin != "1" {
		t.Errorf("the record's pin within the model: %q, %v; want 1", pin, err)
	}
	// The next write of the record, by this host, leaves them out.
	if err := unix.Setxattr(d.path("evil"), "user.ucm.quota", []byte("1000000"), 0); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(rec); err != nil || strings.Contains(string(b), "moves") {
		t.Errorf("the record on the share after this host wrote it: %s, %v; want no moves", b, err)
	}
}
