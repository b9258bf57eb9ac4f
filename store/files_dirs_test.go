package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/files"
)

// TestStagingTierTemp: in a tree of Files, a ucmfs tier's own temp
// name is a staging name too (a daemon whose tier is this model writes
// back through it), beside the layout's.
func TestStagingTierTemp(t *testing.T) {
	s := newTestStore(t, Options{Layout: files.Name})
	s.Models().Add("e")
	for _, n := range []string{".tmp-host@12-0a1b-0123456789abcdef", "abc.bin_8812345.tmp"} {
		if !s.Models().Staging("e", "", n) {
			t.Errorf("%q is not a staging name", n)
		}
	}
	for _, n := range []string{"abc.bin", ".tmp-foo", ".tmp-a@1-b"} {
		if s.Models().Staging("e", "", n) {
			t.Errorf("%q is a staging name", n)
		}
	}
}

// TestFilesListTwoTiers: a directory's listing names each file once,
// when the memory tier and the nvme tier both hold it
// (written back), and none of the model root's files.
func TestFilesListTwoTiers(t *testing.T) {
	s := newTestStore(t, Options{Layout: files.Name})
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
