package store

import "testing"

// TestDirPinCovers: a pinned directory holds the files beneath it, at any
// depth, and no file of a sibling whose name it prefixes; the root holds
// every file of its model and none of another.
func TestDirPinCovers(t *testing.T) {
	var tab dirPinTable
	tab.set("m", []string{"a/b"})
	for path, want := range map[string]bool{
		"a/b/x.bin": true, "a/b/c/d/x.bin": true, "a/bc/x.bin": false, "a/x.bin": false, "a/b": false,
	} {
		if got := tab.covers("m", path); got != want {
			t.Errorf("a/b covers %s: %v, want %v", path, got, want)
		}
	}
	tab.set("root", []string{""})
	if !tab.covers("root", "x.bin") || !tab.covers("root", "d/x.bin") || tab.covers("other", "x.bin") {
		t.Error("the root's pin")
	}
	tab.set("m", nil)
	if tab.covers("m", "a/b/x.bin") {
		t.Error("after the model's pins are cleared")
	}
}
