package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestInspectValid(t *testing.T) {
	dir := t.TempDir()
	id := testIDs[0]
	blk := writeAt(t, dir, id.String()+".bin", blockFile(id))
	rep := writeAt(t, dir, id.String()+".repr", reprFile(id))
	code, out, errs := runMain(t, "inspect", blk, rep)
	if code != 0 || errs != "" {
		t.Fatalf("inspect: %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		blk + "\n", "type           block (UCMB v1)", "id             " + id.String() + " (shard " + id.Shard() + ")",
		"num_layers     2", "block_size     4 tokens", "dtype          float16 (2 bytes)", "head_dim       8",
		"tensors        2 per layer (K, V; field 0)", "tensor bytes   128 (layer stride 256)", "payload_len    512",
		rep + "\n", "type           sidecar (UCMR v1)", "kind           0 mean", "rows           1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "result         OK\n"); n != 2 {
		t.Errorf("%d OK results:\n%s", n, out)
	}
}

func TestInspectInvalid(t *testing.T) {
	dir := t.TempDir()
	id, other := testIDs[0], testIDs[1]
	corrupt := blockFile(id)
	corrupt[len(corrupt)-1] ^= 1
	good := writeAt(t, dir, "good/"+id.String()+".bin", blockFile(id))
	cases := []struct {
		name, path, rule string
	}{
		{"bad crc", writeAt(t, dir, "crc/"+id.String()+".bin", corrupt), "crc"},
		{"wrong id", writeAt(t, dir, "id/"+other.String()+".bin", blockFile(id)), "id"},
		{"truncated", writeAt(t, dir, "short/"+id.String()+".bin", blockFile(id)[:30]), "size"},
		{"bad magic", writeAt(t, dir, "magic/"+id.String()+".repr", blockFile(id)), "magic"},
	}
	for _, c := range cases {
		code, out, _ := runMain(t, "inspect", good, c.path)
		if code != exitFail {
			t.Errorf("%s: status %d, want 1", c.name, code)
		}
		if !strings.Contains(out, "result         OK\n") || !strings.Contains(out, "result         INVALID: ") ||
			!strings.Contains(out, " "+c.rule+" rule broken") {
			t.Errorf("%s: output does not report rule %s:\n%s", c.name, c.rule, out)
		}
	}
	code, out, _ := runMain(t, "inspect", filepath.Join(dir, "absent.bin"))
	if code != exitFail || !strings.Contains(out, "result         ERROR: ") {
		t.Errorf("absent file: %d\n%s", code, out)
	}
}
