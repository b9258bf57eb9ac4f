package tiers

import "github.com/ucmfs/ucmfs/tiers/dir"

// The directory tiers are package tiers/dir; these are its names as the
// rest of the daemon knows them (the configuration, the offline tools
// over a tier directory). The health a stack reports is tier.Health
// (tier.go).

// DirConfig configures a directory tier (dir.Config).
type DirConfig = dir.Config

// DirTier is a directory tier (dir.Tier).
type DirTier = dir.Tier

// NewDirTier opens a directory tier (dir.New); a Stack builds its own
// (New).
func NewDirTier(cfg DirConfig) (*DirTier, error) { return dir.New(cfg) }

// Defaults of DirConfig.Revalidate and DirConfig.KeepRecent.
const (
	DefaultRevalidate = dir.DefaultRevalidate
	DefaultKeepRecent = dir.DefaultKeepRecent
)

// Fsck checks (and with Repair, repairs) the tier directory dir offline
// (dir.Fsck).
func Fsck(d string, opts FsckOptions) (FsckReport, error) { return dir.Fsck(d, opts) }

// FsckOptions, FsckReport, Finding and FindingKind are Fsck's (dir's).
type (
	FsckOptions = dir.FsckOptions
	FsckReport  = dir.FsckReport
	Finding     = dir.Finding
	FindingKind = dir.FindingKind
)

// The kinds of findings (dir's).
const (
	FindingBad      = dir.FindingBad
	FindingLeftover = dir.FindingLeftover
	FindingError    = dir.FindingError
)

// QuarantineDir is where Fsck with Repair moves what it takes out of a
// tier directory (dir.QuarantineDir).
const QuarantineDir = dir.QuarantineDir

// IsTempName reports whether name is a tier's temp file (dir.IsTempName).
func IsTempName(name string) bool { return dir.IsTempName(name) }

// TierFile is what LocateTierFile finds (dir.TierFile).
type TierFile = dir.TierFile

// LocateTierFile finds the tier directory among the parents of path and
// says whether the file is raw there (dir.LocateTierFile).
func LocateTierFile(path string) (TierFile, bool) { return dir.LocateTierFile(path) }
