package tiers

import "github.com/ucmfs/ucmfs/tiers/tier"

// The contract every tier keeps, and the stack's results are made of, is
// package tiers/tier, below the tiers; these are its names as the rest
// of the daemon knows them.

// Info describes one published file in a tier (tier.Info).
type Info = tier.Info

// Usage is a tier's capacity and use, in bytes of file content
// (tier.Usage).
type Usage = tier.Usage

// CommitOptions says how a Writer publishes its file (tier.CommitOptions).
type CommitOptions = tier.CommitOptions

// Tier is one level of block storage (tier.Tier).
type Tier = tier.Tier

// Writer is a file being written into a tier (tier.Writer).
type Writer = tier.Writer

// Health is the state of a tier below memory (tier.Health; a directory
// tier's: dir.Health).
type Health = tier.Health

// The states of a tier below memory (tier.Up, tier.Unstable, tier.Down).
const (
	Up       = tier.Up
	Unstable = tier.Unstable
	Down     = tier.Down
)

// Errors returned by tiers and the stack (tier's). Callers test them with
// errors.Is; the FUSE layer maps them to errno in one place.
var (
	ErrNotFound   = tier.ErrNotFound   // the tier (or no tier) holds the key
	ErrExist      = tier.ErrExist      // the key is already published
	ErrFull       = tier.ErrFull       // this tier has no room for the file right now
	ErrNoSpace    = tier.ErrNoSpace    // no tier has room
	ErrCorrupt    = tier.ErrCorrupt    // a stored file failed its CRC-32C or header check
	ErrStalled    = tier.ErrStalled    // a directory did not answer in time
	ErrReadOnly   = tier.ErrReadOnly   // a directory tier's filesystem refused a write with EROFS
	ErrTierFailed = tier.ErrTierFailed // a directory tier's filesystem failed a write with EIO
	ErrClosed     = tier.ErrClosed     // the tier or stack was closed
	ErrLocked     = tier.ErrLocked     // another live process holds a tier's lock file
)

// DefaultMaxFiles is the most files a tier holds unless configured
// (tier.DefaultMaxFiles).
const DefaultMaxFiles = tier.DefaultMaxFiles

// LockFileName is the lock file a tier keeps in its root directory
// (tier.LockFileName).
const LockFileName = tier.LockFileName

// TreeMarkName marks a model directory of a tier as a tree of Files
// (tier.TreeMarkName).
const TreeMarkName = tier.TreeMarkName

// ModelMetaName is the settings file of a model in a tier directory
// (tier.ModelMetaName).
const ModelMetaName = tier.ModelMetaName

// ReservedInModel reports whether name, in a model directory of a tier,
// is one of the tiers' own records there (tier.ReservedInModel).
func ReservedInModel(name string) bool { return tier.ReservedInModel(name) }
