package engine

import (
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// cuResult is the driver's CUresult.
type cuResult int32

// lib holds the entry points an engine uses, resolved by their versioned
// names.
type lib struct {
	handle uintptr

	cuInit                   func(flags uint32) cuResult
	cuDeviceGet              func(dev *int32, ord int32) cuResult
	cuDeviceGetUuid          func(u *[16]byte, dev int32) cuResult
	cuDevicePrimaryCtxRetain func(ctx *uintptr, dev int32) cuResult
	cuCtxSetCurrent          func(ctx uintptr) cuResult
	cuMemAlloc               func(p *uint64, n uintptr) cuResult
	cuMemFree                func(p uint64) cuResult
	cuIpcGetMemHandle        func(h *[64]byte, p uint64) cuResult
	cuMemcpyHtoD             func(dst uint64, src uintptr, n uintptr) cuResult
	cuMemcpyDtoH             func(dst uintptr, src uint64, n uintptr) cuResult
	cuMemGetGranularity      func(g *uintptr, prop *allocProp, opt int32) cuResult
	cuMemCreate              func(h *uint64, n uintptr, prop *allocProp, flags uint64) cuResult
	cuMemExport              func(out unsafe.Pointer, h uint64, typ int32, flags uint64) cuResult
	cuMemAddressReserve      func(p *uint64, n, align uintptr, addr uint64, flags uint64) cuResult
	cuMemAddressFree         func(p uint64, n uintptr) cuResult
	cuMemMap                 func(p uint64, n, off uintptr, h uint64, flags uint64) cuResult
	cuMemSetAccess           func(p uint64, n uintptr, desc *accessDesc, count uintptr) cuResult
	cuMemUnmap               func(p uint64, n uintptr) cuResult
	cuMemRelease             func(h uint64) cuResult
}

// allocProp is CUmemAllocationProp; accessDesc is CUmemAccessDesc.
type (
	location  struct{ Type, ID int32 }
	allocProp struct {
		Type, HandleTypes int32
		Loc               location
		Win32             uintptr
		Flags             [8]byte
	}
	accessDesc struct {
		Loc   location
		Flags int32
	}
)

func load(path string) (*lib, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("engine: load %s: %w", path, err)
	}
	l := &lib{handle: h}
	for _, s := range []struct {
		fptr any
		name string
	}{
		{&l.cuInit, "cuInit"}, {&l.cuDeviceGet, "cuDeviceGet"}, {&l.cuDeviceGetUuid, "cuDeviceGetUuid_v2"},
		{&l.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"}, {&l.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&l.cuMemAlloc, "cuMemAlloc_v2"}, {&l.cuMemFree, "cuMemFree_v2"}, {&l.cuIpcGetMemHandle, "cuIpcGetMemHandle"},
		{&l.cuMemcpyHtoD, "cuMemcpyHtoD_v2"}, {&l.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
		{&l.cuMemGetGranularity, "cuMemGetAllocationGranularity"}, {&l.cuMemCreate, "cuMemCreate"},
		{&l.cuMemExport, "cuMemExportToShareableHandle"}, {&l.cuMemAddressReserve, "cuMemAddressReserve"},
		{&l.cuMemAddressFree, "cuMemAddressFree"}, {&l.cuMemMap, "cuMemMap"}, {&l.cuMemSetAccess, "cuMemSetAccess"},
		{&l.cuMemUnmap, "cuMemUnmap"}, {&l.cuMemRelease, "cuMemRelease"},
	} {
		sym, err := purego.Dlsym(h, s.name)
		if err != nil {
			return nil, fmt.Errorf("engine: %s has no %s: %w", path, s.name, err)
		}
		purego.RegisterFunc(s.fptr, sym)
	}
	return l, nil
}

// check names a failed call.
func check(fn string, r cuResult) error {
	if r != 0 {
		return fmt.Errorf("engine: %s: CUresult %d", fn, r)
	}
	return nil
}

// Driver is one GPU's primary context, current on the calling thread.
// Every method must be called from the OS thread that called OpenDriver
// (runtime.LockOSThread first).
type Driver struct {
	l    *lib
	dev  int32
	uuid [16]byte
}

// OpenDriver loads the driver library, initializes it and makes GPU
// ordinal's primary context (in this process's numbering, after its
// CUDA_VISIBLE_DEVICES) current on the calling thread.
func OpenDriver(library string, ordinal int) (*Driver, error) {
	l, err := load(library)
	if err != nil {
		return nil, err
	}
	d := &Driver{l: l}
	var ctx uintptr
	for _, s := range []struct {
		name string
		call func() cuResult
	}{
		{"cuInit", func() cuResult { return l.cuInit(0) }},
		{"cuDeviceGet", func() cuResult { return l.cuDeviceGet(&d.dev, int32(ordinal)) }},
		{"cuDeviceGetUuid_v2", func() cuResult { return l.cuDeviceGetUuid(&d.uuid, d.dev) }},
		{"cuDevicePrimaryCtxRetain", func() cuResult { return l.cuDevicePrimaryCtxRetain(&ctx, d.dev) }},
		{"cuCtxSetCurrent", func() cuResult { return l.cuCtxSetCurrent(ctx) }},
	} {
		if err := check(s.name, s.call()); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// UUID is the GPU's UUID as nvidia-smi prints it (GPU-xxxxxxxx-...).
func (d *Driver) UUID() string {
	h := hex.EncodeToString(d.uuid[:])
	return "GPU-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Segment is one allocation of device memory, as a caching allocator
// holds it: tensors live at offsets inside it.
type Segment struct {
	d    *Driver
	Base uint64 // device address
	Size int64

	ipc    [64]byte // IPC: the handle of Base
	vmm    bool
	handle uint64   // VMM: the allocation
	fd     *os.File // VMM: its shareable handle
}

// AllocIPC allocates size bytes with cuMemAlloc_v2 and exports them with
// cuIpcGetMemHandle (the handle names the whole segment, as PyTorch's
// does; tensors are an offset inside it).
func (d *Driver) AllocIPC(size int64) (*Segment, error) {
	s := &Segment{d: d, Size: size}
	if err := check("cuMemAlloc_v2", d.l.cuMemAlloc(&s.Base, uintptr(size))); err != nil {
		return nil, err
	}
	if err := check("cuIpcGetMemHandle", d.l.cuIpcGetMemHandle(&s.ipc, s.Base)); err != nil {
		d.l.cuMemFree(s.Base)
		return nil, err
	}
	return s, nil
}

// AllocVMM allocates size bytes (rounded up to the granularity) the way
// PyTorch's expandable segments and vLLM's sleep-mode allocator do:
// cuMemCreate with a POSIX-fd shareable handle, cuMemAddressReserve,
// cuMemMap, cuMemSetAccess; and exports the fd
// (cuMemExportToShareableHandle).
func (d *Driver) AllocVMM(size int64) (*Segment, error) {
	l := d.l
	prop := allocProp{Type: 1, HandleTypes: 1, Loc: location{Type: 1, ID: d.dev}}
	var gran uintptr
	if err := check("cuMemGetAllocationGranularity", l.cuMemGetGranularity(&gran, &prop, 0)); err != nil {
		return nil, err
	}
	n := (uintptr(size) + gran - 1) / gran * gran
	s := &Segment{d: d, Size: int64(n), vmm: true}
	if err := check("cuMemCreate", l.cuMemCreate(&s.handle, n, &prop, 0)); err != nil {
		return nil, err
	}
	var fd int32 = -1
	err := check("cuMemExportToShareableHandle", l.cuMemExport(unsafe.Pointer(&fd), s.handle, 1, 0))
	if err == nil {
		s.fd = os.NewFile(uintptr(fd), "vmm")
		err = check("cuMemAddressReserve", l.cuMemAddressReserve(&s.Base, n, 0, 0, 0))
	}
	if err == nil {
		err = check("cuMemMap", l.cuMemMap(s.Base, n, 0, s.handle, 0))
	}
	if err == nil {
		desc := accessDesc{Loc: location{Type: 1, ID: d.dev}, Flags: 3}
		err = check("cuMemSetAccess", l.cuMemSetAccess(s.Base, n, &desc, 1))
	}
	if err != nil {
		s.Free()
		return nil, err
	}
	return s, nil
}

// IPCHandle is the segment's IPC handle as 128 hex digits ("" for VMM).
func (s *Segment) IPCHandle() string {
	if s.vmm {
		return ""
	}
	return hex.EncodeToString(s.ipc[:])
}

// FD is the VMM segment's shareable handle (nil for IPC); it stays open
// until Free.
func (s *Segment) FD() *os.File { return s.fd }

// Write copies b to the segment at off (cuMemcpyHtoD_v2).
func (s *Segment) Write(off int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	r := s.d.l.cuMemcpyHtoD(s.Base+uint64(off), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	runtime.KeepAlive(b)
	return check("cuMemcpyHtoD_v2", r)
}

// Read copies the segment's bytes at off to b (cuMemcpyDtoH_v2).
func (s *Segment) Read(off int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	r := s.d.l.cuMemcpyDtoH(uintptr(unsafe.Pointer(&b[0])), s.Base+uint64(off), uintptr(len(b)))
	runtime.KeepAlive(b)
	return check("cuMemcpyDtoH_v2", r)
}

// Free releases the segment.
func (s *Segment) Free() error {
	l := s.d.l
	if !s.vmm {
		return check("cuMemFree_v2", l.cuMemFree(s.Base))
	}
	var first error
	if s.Base != 0 {
		l.cuMemUnmap(s.Base, uintptr(s.Size))
		first = check("cuMemAddressFree", l.cuMemAddressFree(s.Base, uintptr(s.Size)))
	}
	if s.fd != nil {
		s.fd.Close()
	}
	if err := check("cuMemRelease", l.cuMemRelease(s.handle)); err != nil && first == nil {
		first = err
	}
	return first
}
