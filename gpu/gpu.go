package gpu

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// Errors returned by devices and regions. Callers test them with
// errors.Is; driver failures are *CUDAError values, which also match the
// sentinel they correspond to.
var (
	// ErrBounds: a copy reaches outside its region (negative offset,
	// off+len past the size, or an offset that overflows). Nothing moved.
	ErrBounds = errors.New("copy out of region bounds")
	// ErrNoDevice: no usable CUDA driver or device (or the device index
	// does not exist).
	ErrNoDevice = errors.New("no GPU device")
	// ErrBadHandle: the region's handle cannot be opened: a malformed or
	// stale CUDA IPC handle, or a simulated-device path that is missing
	// or not a regular file, or a spec of the other device's kind.
	ErrBadHandle = errors.New("bad device memory handle")
	// ErrSize: the region's offset or size is negative, or it reaches past
	// the end of the memory behind its handle.
	ErrSize = errors.New("region size does not match the device memory")
	// ErrRegistered: the host range overlaps one already registered.
	ErrRegistered = errors.New("host memory already registered")
	// ErrNotRegistered: UnregisterHost of a range RegisterHost did not take.
	ErrNotRegistered = errors.New("host memory not registered")
	// ErrFault: the memory behind a copy vanished during it (the engine
	// shrank its shared-memory file, or the host range is not writable).
	// Part of the copy may have happened.
	ErrFault = errors.New("memory fault during copy")
	// ErrClosed: the device or region was closed.
	ErrClosed = errors.New("closed")
	// ErrMode: Config.Mode is not auto, cuda or sim.
	ErrMode = errors.New("unknown gpu mode")
	// ErrWrongDevice: the engine's memory lives on another GPU than the
	// one the spec names.
	ErrWrongDevice = errors.New("engine memory is on another GPU")
	// ErrReset: a sticky error (a fault during a copy: the engine died,
	// or its memory went away) made the GPU's context unusable; it was
	// reset, which closed every region on that GPU. The engine must
	// register again.
	ErrReset = errors.New("GPU context reset: register again")
	// ErrDeviceLost: the GPU's context could not be recovered after a
	// sticky error; the daemon must be restarted to use that GPU again.
	ErrDeviceLost = errors.New("GPU lost")
)

// Device moves bytes between host memory and device memory regions. Its
// methods are safe for concurrent use.
type Device interface {
	// Name says which device this is: "cuda:0 NVIDIA H200", "sim".
	Name() string
	// RegisterHost pins host memory (a memory-tier file mapping) for DMA
	// until UnregisterHost(b) with the same slice start. Ranges must not
	// overlap. The simulated device only keeps the bookkeeping.
	RegisterHost(b []byte, access HostAccess) error
	// UnregisterHost undoes RegisterHost for the range starting at &b[0].
	UnregisterHost(b []byte) error
	// OpenRegion maps engine memory into this process.
	OpenRegion(spec RegionSpec) (Region, error)
	// Stats says which device this is, why it was chosen, and the state
	// of its contexts and registrations (for .ucm/stats).
	Stats() Stats
	// Close closes every open region, unregisters all host memory and
	// releases the device; later calls fail with ErrClosed.
	Close() error
}

// Stats is a snapshot of a device's state.
type Stats struct {
	Device           string `json:"device"`               // Name()
	Fallback         string `json:"fallback,omitempty"`   // why auto chose sim, "" otherwise
	DriverVersion    int    `json:"driver_version"`       // cuDriverGetVersion, e.g. 12080; 0 for sim
	Contexts         []int  `json:"contexts"`             // ordinals of the GPUs in use
	Streams          int    `json:"streams"`              // streams per GPU
	BatchAPI         bool   `json:"batch_api"`            // cuMemcpyBatchAsync is used
	ReadOnlyRegister bool   `json:"read_only_register"`   // CU_MEMHOSTREGISTER_READ_ONLY is used
	HostRanges       int    `json:"host_ranges"`          // registered host ranges
	HostBytes        int64  `json:"host_bytes"`           // their bytes
	HostPending      int    `json:"host_pending"`         // ranges recorded but not (yet) registered with the driver
	Resets           int64  `json:"resets"`               // contexts reset after a sticky error
	LastReset        string `json:"last_reset,omitempty"` // the GPU and error of the last reset
}

// HostAccess says how the device may use a registered host range.
type HostAccess int

const (
	// HostReadWrite: loads and dumps; the mapping must be writable.
	HostReadWrite HostAccess = iota
	// HostReadOnly: loads only (host to device); for read-only mappings
	// such as the memory tier's (CU_MEMHOSTREGISTER_READ_ONLY).
	HostReadOnly
)

// IPCHandleSize is the size of a CUDA IPC memory handle (cudaIpcMemHandle_t).
const IPCHandleSize = 64

// RegionSpec names engine memory. A CUDA device takes Handle (a
// cuIpcGetMemHandle handle: 64 raw bytes or 128 hex digits) or FD (VMM
// memory); the simulated device takes Path (a shared-memory file the
// engine created and sized) or FD (a descriptor of such a file). The
// region is the Size bytes at Offset inside the memory behind the handle:
// an IPC handle names a whole allocation, and an engine's caching
// allocator (PyTorch's) places a tensor at an offset inside one.
// Offset+Size may not pass the end of that memory.
//
// The GPU is named by DeviceUUID when set ("GPU-<8>-<4>-<4>-<4>-<12>" as
// nvidia-smi prints it, or the 32 hex digits): an engine knows its GPU's
// UUID whatever its CUDA_VISIBLE_DEVICES, while its ordinals may differ
// from the daemon's. Otherwise DeviceIndex, in the daemon's numbering.
// Either way the memory must be on that GPU (ErrWrongDevice).
type RegionSpec struct {
	Handle      []byte   // CUDA IPC memory handle
	Path        string   // simulated device: the engine's shared-memory file
	FD          *os.File // VMM: the engine's cuMemExportToShareableHandle fd (POSIX_FILE_DESCRIPTOR); not kept open
	AllocSize   int64    // VMM: bytes of the exported allocation (0: Offset+Size)
	Offset      int64    // where the region starts inside that memory
	Size        int64    // bytes the region spans
	DeviceUUID  string   // the GPU holding the memory (CUDA; sim: ignored)
	DeviceIndex int      // CUDA device ordinal, as this process numbers them, when DeviceUUID is empty
}

// checkSpan checks a spec's offset and size against the bytes the memory
// behind its handle holds, without overflowing.
func checkSpan(spec RegionSpec, holds int64) error {
	if spec.Offset < 0 || spec.Size < 0 || spec.Offset > holds || spec.Size > holds-spec.Offset {
		return fmt.Errorf("gpu: region of %d bytes at offset %d, the memory behind the handle holds %d: %w",
			spec.Size, spec.Offset, holds, ErrSize)
	}
	return nil
}

// Region is engine memory opened in this process. Its methods are safe for
// concurrent use; copies to overlapping ranges from different goroutines
// land in an unspecified order.
type Region interface {
	// Size is the region's length in bytes.
	Size() int64
	// CopyIn copies src (host) to the region at off.
	CopyIn(off int64, src []byte) error
	// CopyOut copies the region's [off, off+len(dst)) to dst (host).
	CopyOut(off int64, dst []byte) error
	// CopyInBatch copies every op's Host bytes to the region at its Off,
	// in order; all bounds are checked first and one bad op fails the
	// batch with ErrBounds before any byte moves.
	CopyInBatch(ops []CopyOp) error
	// CopyOutBatch copies the region's [Off, Off+len(Host)) to each op's
	// Host, with the same all-or-nothing bounds check.
	CopyOutBatch(ops []CopyOp) error
	// Close unmaps the region; later copies fail with ErrClosed.
	Close() error
}

// CopyOp is one range of a batch: Host bytes and the region offset they go
// to (CopyInBatch) or come from (CopyOutBatch).
type CopyOp struct {
	Off  int64
	Host []byte
}

// DefaultStreams is the number of streams per GPU when Config.Streams is 0.
const DefaultStreams = 4

// Config chooses the device.
type Config struct {
	// Streams is the number of CUDA streams per GPU a batch is spread
	// over (0: DefaultStreams).
	Streams int
	// Mode is "auto" (CUDA when the driver loads, cuInit succeeds and a
	// device exists, else sim), "cuda" (fail with ErrNoDevice otherwise)
	// or "sim". Empty means auto.
	Mode string
	// Library is the CUDA driver library to dlopen; empty means
	// "libcuda.so.1".
	Library string
	// Logger gets one line saying which device was chosen and why
	// (default slog.Default()).
	Logger *slog.Logger
}

// DefaultLibrary is the CUDA driver library Open loads by default.
const DefaultLibrary = "libcuda.so.1"

// Open opens the device cfg asks for and logs which one and why: one
// Info line, or, when auto falls back to the simulated device, one Info
// line with the reason (which the device's Stats().Fallback keeps too): a
// host without a GPU is a normal host, not a warning that would bury the
// line that says why a start failed.
func Open(cfg Config) (Device, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	dev, fallback, err := Select(cfg)
	switch {
	case err != nil:
		return nil, err
	case fallback != nil:
		log.Info("gpu device: no usable CUDA driver or GPU here; .ucm/gpu uses the simulated device",
			"device", dev.Name(), "reason", fallback.Error())
	default:
		log.Info("gpu device", "device", dev.Name(), "mode", orDefault(cfg.Mode, "auto"))
	}
	return dev, nil
}

// Select opens the device cfg asks for without logging. When auto falls
// back to the simulated device, fallback says why (the CUDA error, which
// wraps ErrNoDevice); it is nil otherwise.
func Select(cfg Config) (dev Device, fallback error, err error) {
	lib := orDefault(cfg.Library, DefaultLibrary)
	switch cfg.Mode {
	case "sim":
		return newSim(""), nil, nil
	case "cuda":
		d, err := openCUDA(lib, cfg.Streams)
		if err != nil {
			return nil, nil, err
		}
		return d, nil, nil
	case "", "auto":
		d, err := openCUDA(lib, cfg.Streams)
		if err != nil {
			return newSim(err.Error()), err, nil
		}
		return d, nil, nil
	default:
		return nil, nil, fmt.Errorf("gpu: mode %q (want auto, cuda or sim): %w", cfg.Mode, ErrMode)
	}
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
