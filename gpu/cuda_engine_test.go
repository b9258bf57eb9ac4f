package gpu

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// cudaMem is engine memory allocated with the CUDA driver (real, or the
// stand-in of testdata/fakecuda.c) and exported with cuIpcGetMemHandle.
// Its calls run on the engine process's locked main thread.
type cudaMem struct {
	l      *cudaLib
	dptr   uint64
	handle ipcHandle

	cuMemAlloc        func(dptr *uint64, n uintptr) cuResult
	cuMemFree         func(dptr uint64) cuResult
	cuIpcGetMemHandle func(h *ipcHandle, dptr uint64) cuResult
	cuMemcpyHtoD      func(dst uint64, src uintptr, n uintptr) cuResult
	cuMemcpyDtoH      func(dst uintptr, src uint64, n uintptr) cuResult
}

func newCUDAMem(lib string, size int64) (*cudaMem, error) {
	l, err := loadCUDA(lib)
	if err != nil {
		return nil, err
	}
	m := &cudaMem{l: l}
	for _, s := range []struct {
		fptr any
		name string
	}{
		{&m.cuMemAlloc, "cuMemAlloc_v2"},
		{&m.cuMemFree, "cuMemFree_v2"},
		{&m.cuIpcGetMemHandle, "cuIpcGetMemHandle"},
		{&m.cuMemcpyHtoD, "cuMemcpyHtoD_v2"},
		{&m.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
	} {
		sym, err := purego.Dlsym(l.handle, s.name)
		if err != nil {
			return nil, err
		}
		purego.RegisterFunc(s.fptr, sym)
	}
	var dev int32
	var ctx uintptr
	steps := []struct {
		name string
		call func() cuResult
	}{
		{"cuInit", func() cuResult { return l.cuInit(0) }},
		{"cuDeviceGet", func() cuResult { return l.cuDeviceGet(&dev, 0) }},
		{"cuDevicePrimaryCtxRetain", func() cuResult { return l.cuDevicePrimaryCtxRetain(&ctx, dev) }},
		{"cuCtxSetCurrent", func() cuResult { return l.cuCtxSetCurrent(ctx) }},
		{"cuMemAlloc_v2", func() cuResult { return m.cuMemAlloc(&m.dptr, uintptr(size)) }},
		{"cuIpcGetMemHandle", func() cuResult { return m.cuIpcGetMemHandle(&m.handle, m.dptr) }},
	}
	for _, s := range steps {
		if err := l.check(s.name, s.call()); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *cudaMem) spec() string { return "handle=" + encodeHandle(m.handle) }

func (m *cudaMem) write(off int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	r := m.cuMemcpyHtoD(m.dptr+uint64(off), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	runtime.KeepAlive(b)
	return m.l.check("cuMemcpyHtoD_v2", r)
}

func (m *cudaMem) read(off int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	r := m.cuMemcpyDtoH(uintptr(unsafe.Pointer(&b[0])), m.dptr+uint64(off), uintptr(len(b)))
	runtime.KeepAlive(b)
	return m.l.check("cuMemcpyDtoH_v2", r)
}

func (m *cudaMem) free() error {
	if err := m.l.check("cuMemFree_v2", m.cuMemFree(m.dptr)); err != nil {
		return fmt.Errorf("free device memory: %w", err)
	}
	return nil
}
