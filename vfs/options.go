package vfs

import (
	"log/slog"
	"time"

	"github.com/ucmfs/ucmfs/gpu"
)

// DefaultKernelNodes is the default of Options.KernelNodes: no bound
// (light.Pruner says why).
const DefaultKernelNodes = -1

// Options configure a mount (package fs's Options). Zero values take the
// defaults (SetDefaults).
type Options struct {
	Passthrough bool // use FUSE passthrough (fallback: daemon-served I/O)
	AllowOther  bool // let other users than the mounting one use the mount
	// TenantWritePassthrough lets the kernel write, with passthrough, the
	// files that users other than root and the daemon's own write on an
	// AllowOther mount (WritePassthrough): faster
	// writes, their share of the pending budget then checked only at
	// close and each second.
	TenantWritePassthrough bool
	EntryTTL               time.Duration // published entries and attrs (default 1h)
	NegativeTTL            time.Duration // misses (default 1s)
	Logger                 *slog.Logger  // one line per refused request (default slog.Default())
	Debug                  bool          // go-fuse debug log
	// ControlGroup, a group name or numeric id, lets its members use the
	// control files (mode 0660 with that group); by default they are 0600,
	// for the mounting user (and root) only.
	ControlGroup string
	// KernelNodes bounds the nodes of published files the kernel is let
	// keep (light.Pruner); 0 takes DefaultKernelNodes (no bound), a negative
	// value leaves it to the kernel.
	KernelNodes int
	// GPU is the device .ucm/gpu moves blocks to and from (CUDA or the
	// simulated one); nil: the mount has no .ucm/gpu. The caller opens it
	// and closes it after the stack, since the memory tier registers its
	// mappings with it (tiers.MemConfig.Host).
	GPU gpu.Device
	// GPUSocket is where the socket that passes VMM descriptors to
	// .ucm/gpu (register vmm) listens, outside the mount; .ucm/gpu.sock
	// links to it. Empty: no socket (register vmm is refused). Used only
	// with a GPU device.
	GPUSocket string
	// Transport is how requests travel between the kernel and the daemon:
	// fs.TransportAuto (the default), fs.TransportUring or fs.TransportDev
	// (package fs/conn).
	Transport string

	// BridgeOnly leaves the light-node layer out (package fs/light): every
	// request goes to go-fuse's bridge. For tests that compare the two.
	BridgeOnly bool
}

// Defaults of Options.
const (
	DefaultEntryTTL    = time.Hour
	DefaultNegativeTTL = time.Second
)

// SetDefaults gives every zero field of o its default.
func (o *Options) SetDefaults() {
	if o.EntryTTL <= 0 {
		o.EntryTTL = DefaultEntryTTL
	}
	if o.NegativeTTL <= 0 {
		o.NegativeTTL = DefaultNegativeTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.KernelNodes == 0 {
		o.KernelNodes = DefaultKernelNodes
	}
}

// WritePassthrough reports whether the kernel may write a file uid writes
// itself (FUSE passthrough), out of the daemon's sight, on a mount whose
// daemon runs as daemon: on a mount only its user can use, always; on an
// --allow-other mount, for root and the daemon's own user, and for the
// other users only with TenantWritePassthrough. Otherwise the daemon
// serves each write, so that its user's share of the pending budget
// (--max-pending-per-user) is enforced at each write, where passthrough
// is seen only at the writer's close and at the daemon's refresh each
// second, and bounded in the kernel only by the tmpfs's size, everyone's.
func (o *Options) WritePassthrough(uid, daemon uint32) bool {
	return !o.AllowOther || o.TenantWritePassthrough || uid == 0 || uid == daemon
}
