package hashdir

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
	for _, name := range []string{id + ".bin", id + ".tmp", "." + id + ".bin.abc", "." + id + ".bin.abc-ef", id + ".bin.tmp.tmp", ".tmp", "x.bin.tmp"} {
		if got, ok := ParseStagingName("e2", name); ok {
			t.Errorf("%q: staging for %q", name, got)
		}
	}
	if _, ok := ParseStagingName("ff", id+".bin.tmp"); ok {
		t.Error("a staging name in the wrong shard")
	}
}
