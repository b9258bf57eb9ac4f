package format

import "testing"

func TestParseStagingName(t *testing.T) {
	id := "e2e5357c5fa11bc9a78897743ce47949"
	for name, want := range map[string]string{
		id + ".bin.tmp":            id + ".bin",
		id + ".repr.tmp":           id + ".repr",
		"." + id + ".bin.a1B2c3":   id + ".bin",
		"." + id + ".bin.Zz9Zz9Zz": id + ".bin",
	} {
		if got, ok := ParseStagingName("e2", name); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{id + ".bin", "." + id + ".bin.abc", "." + id + ".bin.abc-ef", id + ".bin.tmp.tmp", ".tmp", "x.bin.tmp"} {
		if got, ok := ParseStagingName("e2", name); ok {
			t.Errorf("%q: staging for %q", name, got)
		}
	}
	if _, ok := ParseStagingName("ff", id+".bin.tmp"); ok {
		t.Error("a staging name in the wrong shard")
	}
	// Raw blocks (UCM's names): <id>.tmp and rsync's name in a raw shard
	// of any width, never in a shard the id does not start with.
	for _, dir := range []string{"data", "e", "e2", "e2e", "e2e5"} {
		for name, want := range map[string]string{id + ".tmp": id, "." + id + ".Ab12cd": id} {
			if got, ok := ParseStagingName(dir, name); !ok || got != want {
				t.Errorf("%s/%q: %q %v, want %q", dir, name, got, ok, want)
			}
		}
	}
	for _, dir := range []string{"e3", "f", "e2e53", "Data", ""} {
		if got, ok := ParseStagingName(dir, id+".tmp"); ok {
			t.Errorf("%s/%s.tmp: staging for %q", dir, id, got)
		}
	}
}

// TestRawNames: raw kinds by width, their shard directories, paths and
// header lengths; ParsePath takes them back.
func TestRawNames(t *testing.T) {
	id, _ := ParseID("e2e5357c5fa11bc9a78897743ce47949")
	for w, dir := range []string{"data", "e", "e2", "e2e", "e2e5"} {
		k := Key{Model: "m", ID: id, Kind: RawKind(w)}
		if !k.Kind.Raw() || k.Kind.Width() != w || k.Kind.HeaderLen() != 0 || k.ShardDir() != dir {
			t.Errorf("width %d: raw %v width %d header %d dir %q", w, k.Kind.Raw(), k.Kind.Width(), k.Kind.HeaderLen(), k.ShardDir())
		}
		if want := "m/" + dir + "/" + id.String(); k.Path() != want {
			t.Errorf("width %d: path %q, want %q", w, k.Path(), want)
		}
		if got, err := ParsePath(k.Path()); err != nil || got != k {
			t.Errorf("ParsePath(%q) = %+v, %v", k.Path(), got, err)
		}
	}
	if Block.Raw() || Repr.Raw() || File.Raw() || Block.HeaderLen() != HeaderSize || Kind(8).Valid() {
		t.Error("block, repr, file or kind 8 taken for raw")
	}
	if _, _, err := ParseFileName("e2", id.String()+".bin"); err != nil {
		t.Errorf("a .bin name in a two-hex shard: %v", err)
	}
	for _, bad := range []string{"m/e3/" + id.String(), "m/e2e5357/" + id.String(), "m/data/" + id.String()[:31]} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
	}
}
