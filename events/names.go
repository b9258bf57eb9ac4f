package events

import (
	"encoding/binary"
	"encoding/hex"
	"path"
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/format"
)

// Layout names the layout of the model a key belongs to, as
// user.ucm.layout does: "ucmb" for a block with a UCMB header,
// "ucm-posix" for UCM's raw names, "files" for a file of a files model;
// "" for a sidecar, which events do not report.
func Layout(k format.Key) string {
	switch {
	case k.Kind == format.Block:
		return "ucmb"
	case k.Kind == format.File:
		return "files"
	case k.Kind.Raw():
		return "ucm-posix"
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
// by, as vLLM publishes block hashes by default: the last 8 bytes of the
// digest, read big-endian. A block of a ucmb or ucm-posix model is named
// by UCM's id (an MD5); a file of a files model by the digest its engine
// wrote as its name, where the name is "<hex digest>.bin" (vLLM's fs
// offloading tier and llm-d's fs backend:
// <hhh>/<hh>_g<group>/<sha256 hex>.bin). ok is false where no hash can
// be known (any other file name): such a file is reported on .ucm/events
// only.
func EngineHash(k format.Key) (h uint64, ok bool) {
	switch {
	case k.Kind == format.Block || k.Kind.Raw():
		return binary.BigEndian.Uint64(k.ID[len(k.ID)-8:]), true
	case k.Kind == format.File:
		return fileHash(path.Base(k.Name))
	}
	return 0, false
}

// fileHash parses "<hex>.bin", 16 to 128 lowercase hex digits of an even
// count, to its last 8 bytes.
func fileHash(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, ".bin")
	if !ok || len(digits) < 16 || len(digits) > 128 || len(digits)%2 != 0 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if c := digits[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, false
		}
	}
	var b [8]byte
	if _, err := hex.Decode(b[:], []byte(digits[len(digits)-16:])); err != nil {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[:]), true
}
