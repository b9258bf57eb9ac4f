package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestStagingNames: the engines' temporary names are staging names;
// their final names are not.
func TestStagingNames(t *testing.T) {
	for _, n := range []string{
		"abc.bin_8812345.tmp",                  // vLLM, llm-d
		"m@0x0@ab.tmp",                         // LMCache
		"ab_m_0_1.bin.tmp.12.140.0123456789ab", // SGLang
		".blk.bin.a1B2c3",                      // rsync
		"0123456789abcdef0123456789abcdef.tmp", // UCM
		".ucm_gc.config.tmp.host.12.00ff00ff",  // UCM's GC config
		".o_direct_probe_99.tmp",               // vLLM's probe
		".tmp-host@12-0a1b-0123456789abcdef",   // a ucmfs tier's (a daemon on this model)
	} {
		if !IsStagingName(n) {
			t.Errorf("%q is not a staging name", n)
		}
	}
	for _, n := range []string{"abc.bin", "config.json", "m@0x0@ab.data", ".lock", "tmp", "x.tmpl", ".hidden", ".ucm_gc.config", ".ucm_gc.members", ".tmp-foo", ".tmp-a@1-b"} {
		if IsStagingName(n) {
			t.Errorf("%q is a staging name", n)
		}
	}
}

// TestKeptFiles: an engine's own files are kept, its blocks are not.
func TestKeptFiles(t *testing.T) {
	for _, n := range []string{"m_0123/config.json", ".lock", "log/12/ucm.log", "a/.ucm_gc.checktime"} {
		if !KeptFile(format.FileKey("e", n)) {
			t.Errorf("%q is not kept", n)
		}
	}
	for _, n := range []string{"m_0123_r0/abc/de_g0/ff.bin", "m@0x0@ab.data", "namespace-1/p_m_0_1.bin"} {
		if KeptFile(format.FileKey("e", n)) {
			t.Errorf("%q is kept", n)
		}
	}
	if KeptFile(format.Key{Model: "e", Kind: format.Block}) {
		t.Error("a ucmb block is kept")
	}
}

// TestFilesListTwoTiers: a directory's listing names each file once,
// when the memory tier and the nvme tier both hold it
// (written back), and none of the model root's files.
func TestFilesListTwoTiers(t *testing.T) {
	s := newTestStore(t, Options{Layout: LayoutFiles})
	s.Models().Add("e")
	if err := s.FilesMkdir("e", "d", 0); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 40 {
		dir := "d"
		if i%4 == 0 {
			dir = "" // the model's root: another directory
		}
		name := format.JoinFilePath(dir, fmt.Sprintf("%02x_p.bin", 255-i))
		if _, err := publish(t, s, format.FileKey("e", name), []byte(name)); err != nil {
			t.Fatal(err)
		}
		if dir == "d" {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	if err := s.Flush(context.Background(), "e"); err != nil {
		t.Fatal(err)
	}
	keys, repeats := s.stack.AppendShardKeys("e", format.FileShard("d"), nil)
	if !repeats || len(keys) < 2*len(want) {
		t.Fatalf("written back: %d keys from the tiers (repeats %v), want both tiers' %d", len(keys), repeats, 2*len(want))
	}
	_, files := s.FilesList("e", "d")
	var got []string
	for _, k := range files {
		got = append(got, k.Name)
	}
	slices.Sort(got) // a listing's order is the index's
	if !slices.Equal(got, want) {
		t.Fatalf("listing %q, want %q", got, want)
	}
}
