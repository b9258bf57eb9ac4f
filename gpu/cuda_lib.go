package gpu

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// cuResult is the driver's CUresult.
type cuResult int32

// CUresult values this package tells apart (cuda.h).
const (
	cudaSuccess                cuResult = 0
	cudaErrorNoDevice          cuResult = 100
	cudaErrorInvalidDevice     cuResult = 101
	cudaErrorInvalidHandle     cuResult = 400
	cudaErrorIllegalAddress    cuResult = 700
	cudaErrorAlreadyRegistered cuResult = 712 // CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
	cudaErrorNotRegistered     cuResult = 713 // CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
)

// Flags passed to the driver (cuda.h).
const (
	cuMemHostRegisterPortable    = 0x01 // CU_MEMHOSTREGISTER_PORTABLE
	cuMemHostRegisterReadOnly    = 0x08 // CU_MEMHOSTREGISTER_READ_ONLY
	cuIpcMemLazyEnablePeerAccess = 0x01 // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
	cuStreamNonBlocking          = 0x01 // CU_STREAM_NON_BLOCKING
	cuCtxSchedBlockingSync       = 0x04 // CU_CTX_SCHED_BLOCKING_SYNC
	cuPointerAttrDeviceOrdinal   = 9    // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
	cuMemHandlePosixFD           = 1    // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
	cuMemLocationDevice          = 1    // CU_MEM_LOCATION_TYPE_DEVICE
	cuMemAccessReadWrite         = 3    // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
	cuMemcpySrcAccessOrderStream = 1    // CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
)

// memLocation is CUmemLocation.
type memLocation struct{ Type, ID int32 }

// memAccessDesc is CUmemAccessDesc.
type memAccessDesc struct {
	Loc   memLocation
	Flags int32
}

// memAllocProp is CUmemAllocationProp (32 bytes on 64-bit Linux).
type memAllocProp struct {
	Type, HandleTypes int32
	Loc               memLocation
	Win32             uintptr
	AllocFlags        [8]byte
}

// memcpyAttrs is CUmemcpyAttributes (CUDA 12.8).
type memcpyAttrs struct {
	SrcAccessOrder int32
	SrcLoc, DstLoc memLocation
	Flags          uint32
}

// ipcHandle is CUipcMemHandle: a 64-byte struct the driver takes by value.
type ipcHandle struct {
	Reserved [IPCHandleSize]byte
}

// cudaLib holds the driver entry points, resolved by their versioned names
// (the names cuda.h's #defines select) so the ABI is the current one.
// Host pointers are passed as uintptr; callers keep the memory alive with
// runtime.KeepAlive until the call (or, for async copies, the stream
// synchronization) returns.
type cudaLib struct {
	handle uintptr

	cuInit                      func(flags uint32) cuResult
	cuDriverGetVersion          func(v *int32) cuResult
	cuDeviceGetCount            func(count *int32) cuResult
	cuDeviceGet                 func(dev *int32, ordinal int32) cuResult
	cuDeviceGetName             func(name *byte, n int32, dev int32) cuResult
	cuDeviceGetUuid             func(uuid *[16]byte, dev int32) cuResult
	cuDeviceGetAttribute        func(v *int32, attr int32, dev int32) cuResult
	cuDeviceGetPCIBusID         func(id *byte, n int32, dev int32) cuResult
	cuDeviceTotalMem            func(n *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxSetFlags  func(dev int32, flags uint32) cuResult
	cuDevicePrimaryCtxRetain    func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRelease   func(dev int32) cuResult
	cuDevicePrimaryCtxReset     func(dev int32) cuResult
	cuPointerGetAttribute       func(data unsafe.Pointer, attr int32, dptr uint64) cuResult
	cuMemImportFromShareable    func(h *uint64, os uintptr, typ int32) cuResult
	cuMemGetAllocationPropsFrom func(p *memAllocProp, h uint64) cuResult
	cuMemAddressReserve         func(p *uint64, n uintptr, align uintptr, addr uint64, flags uint64) cuResult
	cuMemAddressFree            func(p uint64, n uintptr) cuResult
	cuMemMap                    func(p uint64, n uintptr, off uintptr, h uint64, flags uint64) cuResult
	cuMemSetAccess              func(p uint64, n uintptr, desc *memAccessDesc, count uintptr) cuResult
	cuMemUnmap                  func(p uint64, n uintptr) cuResult
	cuMemRelease                func(h uint64) cuResult
	cuCtxSetCurrent             func(ctx uintptr) cuResult
	cuMemHostRegister           func(p uintptr, n uintptr, flags uint32) cuResult
	cuMemHostUnregister         func(p uintptr) cuResult
	cuIpcOpenMemHandle          func(dptr *uint64, h ipcHandle, flags uint32) cuResult
	cuIpcCloseMemHandle         func(dptr uint64) cuResult
	cuMemGetAddressRange        func(base *uint64, size *uintptr, dptr uint64) cuResult
	cuMemcpyHtoDAsync           func(dst uint64, src uintptr, n uintptr, stream uintptr) cuResult
	cuMemcpyDtoHAsync           func(dst uintptr, src uint64, n uintptr, stream uintptr) cuResult
	cuStreamCreate              func(stream *uintptr, flags uint32) cuResult
	cuStreamSynchronize         func(stream uintptr) cuResult
	cuStreamDestroy             func(stream uintptr) cuResult
	cuGetErrorName              func(code cuResult, name **byte) cuResult
}

// batchFn is cuMemcpyBatchAsync as CUDA 12.8 declares it (with failIdx).
type batchFn func(dsts, srcs, sizes unsafe.Pointer, count uintptr, attrs *memcpyAttrs,
	attrIdxs *uintptr, numAttrs uintptr, failIdx *uintptr, stream uintptr) cuResult

// symbols maps each entry point to the exported name it is resolved by.
func (l *cudaLib) symbols() []struct {
	fptr any
	name string
} {
	return []struct {
		fptr any
		name string
	}{
		{&l.cuInit, "cuInit"},
		{&l.cuDriverGetVersion, "cuDriverGetVersion"},
		{&l.cuDeviceGetCount, "cuDeviceGetCount"},
		{&l.cuDeviceGet, "cuDeviceGet"},
		{&l.cuDeviceGetName, "cuDeviceGetName"},
		{&l.cuDeviceGetUuid, "cuDeviceGetUuid_v2"},
		{&l.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&l.cuDeviceGetPCIBusID, "cuDeviceGetPCIBusId"},
		{&l.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&l.cuDevicePrimaryCtxSetFlags, "cuDevicePrimaryCtxSetFlags_v2"},
		{&l.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&l.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
		{&l.cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2"},
		{&l.cuPointerGetAttribute, "cuPointerGetAttribute"},
		{&l.cuMemImportFromShareable, "cuMemImportFromShareableHandle"},
		{&l.cuMemGetAllocationPropsFrom, "cuMemGetAllocationPropertiesFromHandle"},
		{&l.cuMemAddressReserve, "cuMemAddressReserve"},
		{&l.cuMemAddressFree, "cuMemAddressFree"},
		{&l.cuMemMap, "cuMemMap"},
		{&l.cuMemSetAccess, "cuMemSetAccess"},
		{&l.cuMemUnmap, "cuMemUnmap"},
		{&l.cuMemRelease, "cuMemRelease"},
		{&l.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&l.cuMemHostRegister, "cuMemHostRegister_v2"},
		{&l.cuMemHostUnregister, "cuMemHostUnregister"},
		{&l.cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2"},
		{&l.cuIpcCloseMemHandle, "cuIpcCloseMemHandle"},
		{&l.cuMemGetAddressRange, "cuMemGetAddressRange_v2"},
		{&l.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
		{&l.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{&l.cuStreamCreate, "cuStreamCreate"},
		{&l.cuStreamSynchronize, "cuStreamSynchronize"},
		{&l.cuStreamDestroy, "cuStreamDestroy_v2"},
		{&l.cuGetErrorName, "cuGetErrorName"},
	}
}

var (
	libsMu sync.Mutex
	libs   = map[string]*cudaLib{}
)

// loadCUDA dlopens the driver library once per path and resolves every
// entry point; a library that lacks one fails as a whole. The library is
// never closed: the driver keeps threads of its own.
func loadCUDA(path string) (*cudaLib, error) {
	libsMu.Lock()
	defer libsMu.Unlock()
	if l, ok := libs[path]; ok {
		return l, nil
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("gpu: load %s: %w: %w", path, ErrNoDevice, err)
	}
	l := &cudaLib{handle: h}
	for _, s := range l.symbols() {
		sym, err := purego.Dlsym(h, s.name)
		if err != nil {
			return nil, fmt.Errorf("gpu: %s has no %s (driver too old?): %w: %w", path, s.name, ErrNoDevice, err)
		}
		purego.RegisterFunc(s.fptr, sym)
	}
	libs[path] = l
	return l, nil
}

// CUDAError is a failed driver call: the entry point and its CUresult. It
// matches ErrNoDevice, ErrBadHandle, ErrRegistered and ErrNotRegistered
// (errors.Is) for the results that mean those.
type CUDAError struct {
	Func string // driver entry point, e.g. "cuIpcOpenMemHandle_v2"
	Code int    // CUresult
	Name string // cuGetErrorName, e.g. "CUDA_ERROR_INVALID_VALUE"
}

// Error implements error.
func (e *CUDAError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Func, e.Name, e.Code)
}

// Is matches the sentinel a result corresponds to.
func (e *CUDAError) Is(target error) bool {
	switch cuResult(e.Code) {
	case cudaErrorNoDevice, cudaErrorInvalidDevice:
		return errors.Is(target, ErrNoDevice)
	case cudaErrorInvalidHandle:
		return errors.Is(target, ErrBadHandle)
	case cudaErrorAlreadyRegistered:
		return errors.Is(target, ErrRegistered)
	case cudaErrorNotRegistered:
		return errors.Is(target, ErrNotRegistered)
	}
	return false
}

// check turns a result into nil or a *CUDAError naming fn.
func (l *cudaLib) check(fn string, r cuResult) error {
	if r == cudaSuccess {
		return nil
	}
	return &CUDAError{Func: fn, Code: int(r), Name: l.errorName(r)}
}

// errorName asks the driver for the result's name; the string it returns
// is static driver memory, copied here.
func (l *cudaLib) errorName(r cuResult) string {
	var p *byte
	if l.cuGetErrorName(r, &p) != cudaSuccess || p == nil {
		return fmt.Sprintf("CUresult %d", int(r))
	}
	return cString(p, 128)
}

// cString copies a NUL-terminated C string of at most limit bytes.
func cString(p *byte, limit int) string {
	var b []byte
	for i := range limit {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// batchFunc looks up cuMemcpyBatchAsync through cuGetProcAddress_v2,
// asking for the CUDA 12.8 ABI (the one with failIdx), so the signature
// called is the one the driver hands out whatever its own version. A
// driver without either gives nil. Call it after cuInit.
func (l *cudaLib) batchFunc() batchFn {
	sym, err := purego.Dlsym(l.handle, "cuGetProcAddress_v2")
	if err != nil {
		return nil
	}
	var getProc func(name *byte, pfn *uintptr, version int32, flags uint64, status *int32) cuResult
	purego.RegisterFunc(&getProc, sym)
	name := []byte("cuMemcpyBatchAsync\x00")
	var pfn uintptr
	var status int32
	if getProc(&name[0], &pfn, 12080, 0, &status) != cudaSuccess || status != 0 || pfn == 0 {
		return nil
	}
	var f batchFn
	purego.RegisterFunc(&f, pfn)
	return f
}
