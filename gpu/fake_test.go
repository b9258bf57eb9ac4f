package gpu

import (
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// fakeCtl reaches the stand-in driver's test hooks (testdata/fakecuda.c).
// Its state is the process's: tests that change it put it back.
type fakeCtl struct {
	live      func() int32
	retained  func(ord int32) int32
	ctxFlags  func(ord int32) int32
	hostFlags func(p uintptr) int32
	setAttr   func(phys, attr, v int32)
	setBatch  func(on int32)
	inject    func(ord, code int32)
	counter   func(i int32) int64
}

// Counters of fakeCtl.counter.
const (
	fakeAsyncCopies = 0
	fakeBatchCalls  = 1
	fakeBatchOps    = 2
	fakeResets      = 3
)

func fakeControl(t testing.TB, lib string) *fakeCtl {
	t.Helper()
	l, err := loadCUDA(lib)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCtl{}
	for name, fn := range map[string]any{
		"fakecuda_live": &f.live, "fakecuda_retained": &f.retained, "fakecuda_ctx_flags": &f.ctxFlags,
		"fakecuda_host_flags": &f.hostFlags, "fakecuda_set_attr": &f.setAttr, "fakecuda_set_batch": &f.setBatch,
		"fakecuda_inject": &f.inject, "fakecuda_counter": &f.counter,
	} {
		purego.RegisterLibFunc(fn, l.handle, name)
	}
	return f
}

// flagsOf is the registration flags the driver holds for b, or -1.
func (f *fakeCtl) flagsOf(b []byte) int { return int(f.hostFlags(uintptr(unsafe.Pointer(&b[0])))) }

// openFakeWith opens the stand-in driver's device with cfg's other fields.
func openFakeWith(t *testing.T, cfg Config) (*cudaDevice, *fakeCtl) {
	t.Helper()
	lib := fakeCUDA(t)
	cfg.Mode, cfg.Library, cfg.Logger = "cuda", lib, quietLog()
	dev, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev.(*cudaDevice), fakeControl(t, lib)
}

// hostSync waits until the host thread has run what was queued on it.
func hostSync(t *testing.T, d *cudaDevice) {
	t.Helper()
	if err := d.host.do(func() error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// uintptrOf is the address of a byte.
func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
