package fs

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/xattr"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/sparse"
	"github.com/ucmfs/ucmfs/store"
)

// TestDerivedMean: a float32 block written through the mount has a
// <id>.repr whose stat size is right before anything reads it, that is
// not listed until stored, and whose data is the mean of the block's K
// vectors, [layers][heads][1][head_dim].
func TestDerivedMean(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		os.Mkdir(m.path(testModel), 0o755)
		k, d := floatBlock(testModel, 1, small, 1)
		rk := sidecarKey(k)
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
		wantSize := int64(64 + small.layers*small.heads*small.dim*4)
		fi, err := os.Stat(m.keyPath(rk))
		if err != nil || fi.Size() != wantSize || fi.Mode().Perm() != 0o444 {
			t.Fatalf("stat before reading: %v %v, want size %d mode 0444", fi, err, wantSize)
		}
		if m.st.Has(rk) {
			t.Fatal("stat derived and stored the sidecar")
		}
		if names := dirNamesOf(t, filepath.Dir(m.keyPath(k))); len(names) != 1 || names[0] != k.FileName() {
			t.Fatalf("shard lists %v before the sidecar is read", names)
		}
		if v, err := xattr.Get(m.keyPath(k), "user.ucm.repr"); err != nil || len(v) != 0 {
			t.Fatalf("user.ucm.repr before reading: %q %v, want empty", v, err)
		}
		raw, err := os.ReadFile(m.keyPath(rk))
		if err != nil {
			t.Fatal(err)
		}
		r, err := sparse.ParseRepr(raw)
		if err != nil {
			t.Fatal(err)
		}
		h := r.Header
		if h.Kind != format.ReprMean || h.Dtype != format.Float32 || h.ID != k.ID || int(h.NumLayers) != small.layers ||
			int(h.NumKVHeads) != small.heads || h.Rows != 1 || int(h.Dim) != small.dim || int64(len(raw)) != wantSize {
			t.Fatalf("sidecar header %s, %d bytes", h, len(raw))
		}
		got, _ := r.Floats(nil)
		want := keyMeans(d, small)
		for i := range want {
			if diff := math.Abs(float64(got[i] - want[i])); diff > 1e-6*math.Max(1, math.Abs(float64(want[i]))) {
				t.Fatalf("value %d (layer %d head %d dim %d): %g, want %g", i, i/(small.heads*small.dim),
					i/small.dim%small.heads, i%small.dim, got[i], want[i])
			}
		}
		if !m.st.Has(rk) {
			t.Fatal("the derived sidecar is not stored after the read")
		}
		if v, err := xattr.Get(m.keyPath(k), "user.ucm.repr"); err != nil || string(v) != "mean" {
			t.Fatalf("user.ucm.repr after reading: %q %v", v, err)
		}
		if names := dirNamesOf(t, filepath.Dir(m.keyPath(k))); len(names) != 2 {
			t.Fatalf("shard lists %v once the sidecar is stored", names)
		}
		if again, err := os.ReadFile(m.keyPath(rk)); err != nil || !bytes.Equal(again, raw) {
			t.Fatalf("second read differs: %v", err)
		}
		if st := readStats(t, m); st.ReprDerived != 1 {
			t.Fatalf("repr_derived %d, want 1 (derived once)", st.ReprDerived)
		}
	})
}

// dirNamesOf lists the names in dir.
func dirNamesOf(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return entNames(ents)
}

// TestDerivedKinds: the model's user.ucm.repr_kind chooses the kind
// derived, each equal to sparse.Derive of the block; bfloat16 blocks
// derive too; the attribute reads back canonical, refuses bad values
// (EINVAL) and "default" goes back to the mount's setting.
func TestDerivedKinds(t *testing.T) {
	m := newMount(t, Options{Passthrough: true}, store.Options{Repr: store.ReprSetting{Kind: format.ReprMax}})
	cases := []struct {
		set   string
		kind  format.ReprKind
		param uint32
		shape blockShape
	}{
		{"mean", format.ReprMean, 0, small},
		{"max", format.ReprMax, 0, small},
		{"merged", format.ReprMerged, sparse.DefaultMerge, small},
		{"merged:2", format.ReprMerged, 2, small},
		{"signhash", format.ReprSignHash, sparse.DefaultHashBits, small},
		{"signhash:64", format.ReprSignHash, 64, small},
		{"mean", format.ReprMean, 0, blockShape{layers: 3, tokens: 4, heads: 2, dim: 16, dtype: format.BFloat16}},
	}
	for i, c := range cases {
		model := "kinds-" + string(rune('a'+i))
		if err := os.Mkdir(m.path(model), 0o755); err != nil {
			t.Fatal(err)
		}
		if v, _ := xattr.Get(m.path(model), "user.ucm.repr_kind"); string(v) != "max" {
			t.Fatalf("default repr_kind %q, want the mount's max", v)
		}
		if err := xattr.Set(m.path(model), "user.ucm.repr_kind", []byte(c.set)); err != nil {
			t.Fatalf("set %s: %v", c.set, err)
		}
		want := (store.ReprSetting{Kind: c.kind, Param: c.param}).String()
		if v, _ := xattr.Get(m.path(model), "user.ucm.repr_kind"); string(v) != want {
			t.Fatalf("repr_kind reads %q, want %q", v, want)
		}
		k, d := floatBlock(model, i, c.shape, uint64(i))
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
		ref := mustDerive(t, d, c.kind, c.param)
		if fi, err := os.Stat(m.keyPath(sidecarKey(k))); err != nil || fi.Size() != int64(len(ref)) {
			t.Fatalf("%s: stat %v %v, want size %d", c.set, fi, err, len(ref))
		}
		got, err := os.ReadFile(m.keyPath(sidecarKey(k)))
		if err != nil || !bytes.Equal(got, ref) {
			t.Fatalf("%s: the sidecar differs from sparse.Derive (%v)", c.set, err)
		}
		if v, err := xattr.Get(m.keyPath(sidecarKey(k)), "user.ucm.kind"); err != nil || string(v) != c.kind.String() {
			t.Fatalf("%s: sidecar kind %q %v", c.set, v, err)
		}
	}
	mp := m.path("kinds-a")
	for _, bad := range []string{"median", "mean:1", "merged:0", "signhash:7", "signhash:4096", ""} {
		if err := xattr.Set(mp, "user.ucm.repr_kind", []byte(bad)); errnoOf(err) != syscall.EINVAL {
			t.Errorf("repr_kind %q: %v, want EINVAL", bad, err)
		}
	}
	if err := xattr.Set(mp, "user.ucm.repr_kind", []byte("default")); err != nil {
		t.Fatal(err)
	}
	if v, _ := xattr.Get(mp, "user.ucm.repr_kind"); string(v) != "max" {
		t.Fatalf("after default: %q, want max", v)
	}
	// rm -r drops the model's setting with the model.
	mb := m.path("kinds-b")
	if err := os.RemoveAll(mb); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mb, 0o755); err != nil {
		t.Fatal(err)
	}
	if v, _ := xattr.Get(mb, "user.ucm.repr_kind"); string(v) != "max" {
		t.Fatalf("a model made again reads %q, want the mount's max", v)
	}
}

// TestEngineSidecar: an engine's own sidecar is validated at close (a bad
// header or one that does not match its block: EINVAL; no block: ENOENT),
// immutable once stored, served as written, and removed with its block,
// as is a derived one.
func TestEngineSidecar(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		const model = "engine-model"
		os.Mkdir(m.path(model), 0o755)
		if err := xattr.Set(m.path(model), "user.ucm.repr_kind", []byte("none")); err != nil {
			t.Fatal(err)
		}
		k, d := floatBlock(model, 1, small, 1)
		rk := sidecarKey(k)
		if err := writeFile(m.keyPath(k), d); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(m.keyPath(rk)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("repr_kind none: stat %v, want ENOENT", err)
		}
		bad := mustDerive(t, d, format.ReprMax, 0)
		copy(bad, "XXXX")
		if err := writeFile(m.keyPath(rk), bad); errnoOf(err) != syscall.EINVAL {
			t.Fatalf("bad magic: close %v, want EINVAL", err)
		}
		other, od := floatBlock(model, 2, blockShape{layers: 2, tokens: 5, heads: 2, dim: 8, dtype: format.Float32}, 2)
		wrong := mustDerive(t, od, format.ReprMax, 0) // 2 heads, the block has 3
		wrong = format.NewRepr(withID(t, wrong, k.ID), wrong[64:])
		if err := writeFile(m.keyPath(rk), wrong); errnoOf(err) != syscall.EINVAL {
			t.Fatalf("sidecar of another shape: close %v, want EINVAL", err)
		}
		if err := writeFile(m.keyPath(sidecarKey(other)), mustDerive(t, od, format.ReprMean, 0)); errnoOf(err) != syscall.ENOENT {
			t.Fatalf("orphan sidecar: close %v, want ENOENT", err)
		}
		own := mustDerive(t, d, format.ReprMax, 0)
		if err := writeFile(m.keyPath(rk), own); err != nil {
			t.Fatalf("engine sidecar: %v", err)
		}
		if got, err := os.ReadFile(m.keyPath(rk)); err != nil || !bytes.Equal(got, own) {
			t.Fatalf("read back: %v", err)
		}
		if v, _ := xattr.Get(m.keyPath(k), "user.ucm.repr"); string(v) != "max" {
			t.Fatalf("user.ucm.repr %q, want max", v)
		}
		if err := writeNoExcl(m.keyPath(rk), own); errnoOf(err) != syscall.EACCES {
			t.Fatalf("rewrite of a stored sidecar: %v, want EACCES", err)
		}
		if err := os.Remove(m.keyPath(k)); err != nil {
			t.Fatal(err)
		}
		if m.st.Has(rk) {
			t.Fatal("the sidecar outlived its block")
		}
		// The kernel's entry of the sidecar is dropped by a notification
		// sent once UNLINK is answered (the kernel holds the directory's
		// lock until then): a stat in that moment may still find it.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			_, err := os.Stat(m.keyPath(rk))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sidecar after rm of its block: %v", err)
			}
		}

		// Derivation on: the derived sidecar exists, so an O_EXCL create
		// is EEXIST; an engine writes its own without O_EXCL before
		// anything reads the derived one.
		if err := xattr.Set(m.path(model), "user.ucm.repr_kind", []byte("mean")); err != nil {
			t.Fatal(err)
		}
		k3, d3 := floatBlock(model, 3, small, 3)
		rk3 := sidecarKey(k3)
		if err := writeFile(m.keyPath(k3), d3); err != nil {
			t.Fatal(err)
		}
		own3 := mustDerive(t, d3, format.ReprMerged, 1) // 5 rows: larger than the derived mean
		if err := writeFile(m.keyPath(rk3), own3); errnoOf(err) != syscall.EEXIST {
			t.Fatalf("O_EXCL over a derivable sidecar: %v, want EEXIST", err)
		}
		if err := writeNoExcl(m.keyPath(rk3), own3); err != nil {
			t.Fatalf("engine sidecar without O_EXCL: %v", err)
		}
		if fi, err := os.Stat(m.keyPath(rk3)); err != nil || fi.Size() != int64(len(own3)) {
			t.Fatalf("stat of the engine's sidecar: %v %v", fi, err)
		}
		if got, err := os.ReadFile(m.keyPath(rk3)); err != nil || !bytes.Equal(got, own3) {
			t.Fatalf("the engine's sidecar reads back wrong: %v", err)
		}
		// A derived and stored sidecar goes with its block too.
		k4, d4 := floatBlock(model, 4, small, 4)
		if err := writeFile(m.keyPath(k4), d4); err != nil {
			t.Fatal(err)
		}
		if _, err := os.ReadFile(m.keyPath(sidecarKey(k4))); err != nil || !m.st.Has(sidecarKey(k4)) {
			t.Fatalf("derived sidecar not stored: %v", err)
		}
		if err := os.Remove(m.keyPath(k4)); err != nil {
			t.Fatal(err)
		}
		if m.st.Has(sidecarKey(k4)) {
			t.Fatal("the derived sidecar outlived its block")
		}
		if _, err := os.Stat(m.keyPath(sidecarKey(k4))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("derived sidecar after rm of its block: %v", err)
		}
	})
}

// withID returns the header of sidecar file f with its id set to id.
func withID(t *testing.T, f []byte, id format.ID) format.ReprHeader {
	t.Helper()
	h, err := format.DecodeReprHeader(f)
	if err != nil {
		t.Fatal(err)
	}
	h.ID = id
	return h
}

// TestUnderivable: blocks whose layout allows no derivation (a dtype
// other than float16/bfloat16/float32, heads or head_dim not stated) have
// no sidecar: stat and open are ENOENT, with one log line per lookup, and
// the daemon keeps serving.
func TestUnderivable(t *testing.T) {
	h := &countHandler{}
	m := newMount(t, Options{Logger: newTestLogger(h)})
	os.Mkdir(m.path(testModel), 0o755)
	fp8, dfp8 := floatBlock(testModel, 1, blockShape{layers: 1, tokens: 4, heads: 2, dim: 8, dtype: format.Float8E4M3FN}, 1)
	noHeads, dnh := testBlock(testModel, 2, 64) // bfloat16, heads and head_dim not stated
	for _, b := range []struct {
		k format.Key
		d []byte
	}{{fp8, dfp8}, {noHeads, dnh}} {
		if err := writeFile(m.keyPath(b.k), b.d); err != nil {
			t.Fatal(err)
		}
		h.reset()
		if _, err := os.Stat(m.keyPath(sidecarKey(b.k))); errnoOf(err) != syscall.ENOENT {
			t.Fatalf("stat of an underivable sidecar: %v, want ENOENT", err)
		}
		if n := h.count(); n != 1 {
			t.Errorf("%d log lines for the lookup, want 1", n)
		}
		if _, err := os.ReadFile(m.keyPath(sidecarKey(b.k))); errnoOf(err) != syscall.ENOENT {
			t.Fatalf("read of an underivable sidecar: %v, want ENOENT", err)
		}
		if got, err := os.ReadFile(m.keyPath(b.k)); err != nil || !bytes.Equal(got, b.d) {
			t.Fatalf("the block itself: %v", err)
		}
	}
	// No block at all: ENOENT, and nothing logged at warning level.
	absent, _ := floatBlock(testModel, 9, small, 9)
	h.reset()
	if _, err := os.Stat(m.keyPath(sidecarKey(absent))); errnoOf(err) != syscall.ENOENT {
		t.Fatalf("sidecar of an absent block: %v", err)
	}
	if n := h.count(); n != 0 {
		t.Errorf("%d warnings for a sidecar of an absent block, want 0", n)
	}
}

// TestDerivedConcurrentReads: readers racing on a derivable sidecar all
// read the same bytes, and it is derived and stored once.
func TestDerivedConcurrentReads(t *testing.T) {
	m := newMount(t, Options{Passthrough: true})
	os.Mkdir(m.path(testModel), 0o755)
	k, d := floatBlock(testModel, 1, small, 1)
	if err := writeFile(m.keyPath(k), d); err != nil {
		t.Fatal(err)
	}
	want := mustDerive(t, d, format.ReprMean, 0)
	errs := make(chan error, 8)
	for i := 0; i < cap(errs); i++ {
		go func() {
			got, err := os.ReadFile(m.keyPath(sidecarKey(k)))
			if err == nil && !bytes.Equal(got, want) {
				err = errors.New("read different bytes")
			}
			errs <- err
		}()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := readStats(t, m); st.ReprDerived != 1 {
		t.Fatalf("derived %d times, want 1", st.ReprDerived)
	}
}
