package gpu

import (
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
)

// DeviceInfo is what the driver says about one GPU, read without creating
// a context.
type DeviceInfo struct {
	Ordinal  int    `json:"ordinal"`    // this process's numbering (CUDA_VISIBLE_DEVICES applies)
	Name     string `json:"name"`       // cuDeviceGetName
	UUID     string `json:"uuid"`       // cuDeviceGetUuid_v2, as nvidia-smi prints it: GPU-xxxxxxxx-...
	PCIBusID string `json:"pci_bus_id"` // cuDeviceGetPCIBusId: dddddddd:bb:dd.f
	TotalMem int64  `json:"total_mem"`  // cuDeviceTotalMem_v2, bytes

	// Attributes ucmfs depends on (cuDeviceGetAttribute).
	UnifiedAddressing    bool `json:"unified_addressing"`               // 41: IPC and pointer attributes work on one address space
	HostRegister         bool `json:"host_register"`                    // 99: cuMemHostRegister is supported
	ReadOnlyHostRegister bool `json:"read_only_host_register"`          // 113: CU_MEMHOSTREGISTER_READ_ONLY is supported
	HostPointerForReg    bool `json:"can_use_host_pointer_for_reg_mem"` // 91
	VMM                  bool `json:"vmm"`                              // 102: virtual memory management (cuMemCreate/cuMemMap)
	VMMPosixFD           bool `json:"vmm_posix_fd"`                     // 103: VMM handles export as POSIX fds
	AsyncEngines         int  `json:"async_engines"`                    // 40: copy engines
}

// ProbeResult is what Probe found.
type ProbeResult struct {
	Library       string       `json:"library"`
	DriverVersion int          `json:"driver_version"` // e.g. 12080 for 12.8
	Devices       []DeviceInfo `json:"devices"`
}

// DriverString formats the driver version as "12.8".
func (p ProbeResult) DriverString() string {
	return fmt.Sprintf("%d.%d", p.DriverVersion/1000, p.DriverVersion%1000/10)
}

// probeMu serializes Probe's cuInit and queries with nothing else of its
// own; driver queries without a context are thread-safe.
var probeMu sync.Mutex

// Probe loads the driver library (DefaultLibrary when lib is empty),
// initializes it and describes every GPU, without creating a context.
// Failures wrap ErrNoDevice.
func Probe(lib string) (ProbeResult, error) {
	lib = orDefault(lib, DefaultLibrary)
	l, err := loadCUDA(lib)
	if err != nil {
		return ProbeResult{Library: lib}, err
	}
	probeMu.Lock()
	defer probeMu.Unlock()
	if err := l.check("cuInit", l.cuInit(0)); err != nil {
		return ProbeResult{Library: lib}, fmt.Errorf("gpu: %w: %w", ErrNoDevice, err)
	}
	p, err := probeDriver(l)
	p.Library = lib
	if err != nil {
		return p, fmt.Errorf("gpu: %w: %w", ErrNoDevice, err)
	}
	return p, nil
}

// probeDriver reads the driver version and every device (after cuInit).
func probeDriver(l *cudaLib) (ProbeResult, error) {
	var p ProbeResult
	var v, n int32
	if err := l.check("cuDriverGetVersion", l.cuDriverGetVersion(&v)); err != nil {
		return p, err
	}
	p.DriverVersion = int(v)
	if err := l.check("cuDeviceGetCount", l.cuDeviceGetCount(&n)); err != nil {
		return p, err
	}
	for ord := range int(n) {
		in, err := probeDevice(l, ord)
		if err != nil {
			return p, err
		}
		p.Devices = append(p.Devices, in)
	}
	return p, nil
}

func probeDevice(l *cudaLib, ord int) (DeviceInfo, error) {
	in := DeviceInfo{Ordinal: ord}
	var dev int32
	if err := l.check("cuDeviceGet", l.cuDeviceGet(&dev, int32(ord))); err != nil {
		return in, err
	}
	var buf [256]byte
	if err := l.check("cuDeviceGetName", l.cuDeviceGetName(&buf[0], int32(len(buf)), dev)); err != nil {
		return in, err
	}
	in.Name = cString(&buf[0], len(buf))
	var u [16]byte
	if err := l.check("cuDeviceGetUuid_v2", l.cuDeviceGetUuid(&u, dev)); err != nil {
		return in, err
	}
	in.UUID = FormatUUID(u)
	if l.cuDeviceGetPCIBusID(&buf[0], int32(len(buf)), dev) == cudaSuccess {
		in.PCIBusID = cString(&buf[0], len(buf))
	}
	var mem uintptr
	if l.cuDeviceTotalMem(&mem, dev) == cudaSuccess {
		in.TotalMem = int64(mem)
	}
	attr := func(a int32) int {
		var v int32
		if l.cuDeviceGetAttribute(&v, a, dev) != cudaSuccess {
			return 0
		}
		return int(v)
	}
	in.UnifiedAddressing = attr(41) != 0
	in.HostRegister = attr(99) != 0
	in.ReadOnlyHostRegister = attr(113) != 0
	in.HostPointerForReg = attr(91) != 0
	in.VMM = attr(102) != 0
	in.VMMPosixFD = attr(103) != 0
	in.AsyncEngines = attr(40)
	return in, nil
}

// FormatUUID formats a CUuuid as nvidia-smi does: GPU-8-4-4-4-12 hex digits.
func FormatUUID(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return "GPU-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ParseUUID accepts a GPU UUID with or without the "GPU-" prefix and the
// dashes, in either case, and returns it as FormatUUID writes it.
func ParseUUID(s string) (string, error) {
	t := strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(s, "GPU-"), "gpu-"), "-", "")
	var u [16]byte
	if len(t) != 32 {
		return "", fmt.Errorf("gpu: UUID %q: want GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx: %w", s, ErrNoDevice)
	}
	if _, err := hex.Decode(u[:], []byte(t)); err != nil {
		return "", fmt.Errorf("gpu: UUID %q: %w: %w", s, ErrNoDevice, err)
	}
	return FormatUUID(u), nil
}
