package rootfstest

import (
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"github.com/ucmfs/ucmfs/tiers/rootfs/memfs"
)

// root is the real Root over a new directory of t's.
var root = Impl{Name: "rootfs.Root", New: func(t *testing.T) func() (rootfs.FS, error) {
	dir := filepath.Join(t.TempDir(), "root")
	return func() (rootfs.FS, error) {
		r, err := rootfs.Open(dir, 0o700)
		if err != nil {
			return nil, err // not a nil *Root in a non-nil FS
		}
		return r, nil
	}
}}

// crash is crashfs over a new scratch directory of t's.
var crash = Impl{Name: "crashfs", New: func(t *testing.T) func() (rootfs.FS, error) {
	dir := filepath.Join(t.TempDir(), "crash")
	d, err := crashfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return func() (rootfs.FS, error) { return d.Open(dir, 0o700) }
}}

// wrapped is a Root under crashfs.Wrap with a hook that lets every
// operation through: the wrapper changes no answer.
var wrapped = Impl{Name: "crashfs.Wrap", New: func(t *testing.T) func() (rootfs.FS, error) {
	open := root.New(t)
	return func() (rootfs.FS, error) {
		fs, err := open()
		if err != nil {
			return nil, err
		}
		return crashfs.Wrap(fs, func(op, rel string) error { return nil }), nil
	}
}}

// mem is memfs: no directory anywhere.
var mem = Impl{Name: "memfs", New: func(t *testing.T) func() (rootfs.FS, error) {
	const dir = "/memfs/tier"
	d, err := memfs.New(dir, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return func() (rootfs.FS, error) { return d.Open(dir, 0o700) }
}}

// TestConformance: the three implementations of rootfs.FS, and a Root
// wrapped, answer every case of the table as the real Root does, errors
// and trees alike.
func TestConformance(t *testing.T) {
	Run(t, root, crash, wrapped, mem)
}
