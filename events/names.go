package events

import (
	"strconv"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
)

// Layout names the layout of the model a key belongs to, as
// user.ucm.layout does (registry.Of: by its kind); "" for a sidecar,
// which events do not report.
func Layout(k format.Key) string {
	if l := registry.Of(k); l != nil && !l.IsSidecar(k) {
		return l.Name()
	}
	return ""
}

// Reported reports whether changes of k are journaled: blocks of every
// layout and the files of files models, not sidecars.
func Reported(k format.Key) bool { return Layout(k) != "" }

// Medium prefixes. A router reads a medium as "<class>_TIER_ucmfs[_<tier>]":
// the class says how fast a load is (CPU: host RAM, DISK: a directory),
// the suffix which directory tier of the node.
const (
	MediumMemory = "CPU_TIER_ucmfs"
	MediumDisk   = "DISK_TIER_ucmfs"
)

// Mediums names the medium of each tier of a stack, given the tiers'
// kinds in TierID order (memory first, "mem", then "nvme", "nfs", ...):
// CPU_TIER_ucmfs for memory, DISK_TIER_ucmfs for the first directory
// tier, DISK_TIER_ucmfs_<kind> for each further one (and _<kind>_<id>
// when a kind repeats), so that one medium is one tier.
func Mediums(kinds []string) []string {
	out := make([]string, len(kinds))
	seen := map[string]bool{}
	for i, kind := range kinds {
		switch {
		case i == 0:
			out[i] = MediumMemory
		case i == 1:
			out[i] = MediumDisk
		default:
			m := MediumDisk + "_" + kind
			if seen[m] {
				m += "_" + strconv.Itoa(i)
			}
			out[i] = m
		}
		seen[out[i]] = true
	}
	return out
}

// EngineHash is the block hash a router of the block's engine knows it
// by (layout.Layout.EngineHash, as vLLM publishes block hashes by
// default: the last 8 bytes of the digest, read big-endian): UCM's id
// for a block of a ucmb or ucm-posix model, the digest a file of a files
// model holds in its name where it is "<hex digest>.bin". ok is false
// where no hash can be known: such a file is reported on .ucm/events
// only.
func EngineHash(k format.Key) (h uint64, ok bool) {
	if l := registry.Of(k); l != nil {
		return l.EngineHash(k)
	}
	return 0, false
}
