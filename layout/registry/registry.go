package registry

import (
	"fmt"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout"
	"github.com/ucmfs/ucmfs/layout/files"
	"github.com/ucmfs/ucmfs/layout/posix"
	"github.com/ucmfs/ucmfs/layout/ucmb"
)

// table is the layouts, the default first.
var table = []layout.Layout{ucmb.Layout{}, posix.Layout{}, files.Layout{}}

// byKind is the layout of each kind of key (nil: no layout's).
var byKind = func() (m [256]layout.Layout) {
	for k := range m {
		for _, l := range table {
			if l.Owns(format.Kind(k)) {
				m[k] = l
			}
		}
	}
	return m
}()

// Default is the layout of a model that has none recorded.
func Default() layout.Layout { return table[0] }

// ByName is the layout named name; ok is false for no layout's name.
func ByName(name string) (layout.Layout, bool) {
	for _, l := range table {
		if l.Name() == name {
			return l, true
		}
	}
	return nil, false
}

// Names are the layouts' names, the default first.
func Names() []string {
	names := make([]string, len(table))
	for i, l := range table {
		names[i] = l.Name()
	}
	return names
}

// Of is the layout whose files k is one of (by its kind); nil for a key
// of no valid kind.
func Of(k format.Key) layout.Layout { return byKind[k.Kind] }

// Parse checks a layout name: errors name the layouts there are.
func Parse(name string) (layout.Layout, error) {
	if l, ok := ByName(name); ok {
		return l, nil
	}
	names := Names()
	return nil, fmt.Errorf("layout %q: want %s or %s", name, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// Find is the first layout of the table that has is (the layout of a
// model directory a tier marks as a tree of Files is Find(Layout.Tree));
// nil when none has.
func Find(is func(layout.Layout) bool) layout.Layout {
	for _, l := range table {
		if is(l) {
			return l
		}
	}
	return nil
}
