package tiers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// The files a host owes its shared tiers (move_owed.go) outlive the
// daemon. The set was in memory only: a daemon killed (kill -9, a crash)
// between a file's write-back to a private tier and its copy to the
// share, which is a second for a file published on the nvme itself and
// an outage's length while the share is down, left the file on its
// private tier only, and no other host ever found it. It is not derived
// again from the private tier at start: the private tier also holds
// copies of the share's files (the host's cache of it), and one the
// share no longer has because another host removed it must not go back
// to the share. So each file owed is marked on the private tier that
// holds it, one small file under owedDirName at its root naming the
// key, made when the file is owed and removed when no shared tier owes
// it any more; the next start owes every file marked again
// (loadOwed), and the copy to the share (payOne) forgets a mark whose
// file is on no private tier now. (A mark is not synced: what a power
// cut takes of them is owed no more, as before.)

// owedDirName is the directory of the marks at a private tier's root (a
// dot directory there is no model: the tier's rebuild passes it by).
const owedDirName = ".ucmfs-owed"

// owedMarkName is the name of k's mark: the hash of its path (a File's
// path may be longer than a name).
func owedMarkName(k format.Key) string {
	sum := sha256.Sum256([]byte(owedMarkBody(k)))
	return owedDirName + "/" + hex.EncodeToString(sum[:16])
}

// owedMarkBody is what k's mark holds: "file <model>/<path>" for a File,
// "block <path>" for the others (format.ParsePath reads it).
func owedMarkBody(k format.Key) string {
	if k.Kind == format.File {
		return "file " + k.Model + "/" + k.Name
	}
	return "block " + k.Path()
}

// parseOwedMark is the key a mark's body names.
func parseOwedMark(b string) (format.Key, error) {
	kind, p, ok := strings.Cut(b, " ")
	switch {
	case ok && kind == "file":
		model, rel, _ := strings.Cut(p, "/")
		if err := format.ValidateModel(model); err != nil {
			return format.Key{}, err
		}
		if err := format.ValidateFilePath(rel); err != nil {
			return format.Key{}, err
		}
		return format.FileKey(model, rel), nil
	case ok && kind == "block":
		return format.ParsePath(p)
	}
	return format.Key{}, fmt.Errorf("%w: owed mark %q", format.ErrName, b)
}

// markOwed marks k, just written to the private tier d, as owed.
func (s *Stack) markOwed(d tier.Lower, k format.Key) {
	if !s.HasShared() {
		return
	}
	root := d.Root()
	err := root.WriteFile(owedMarkName(k), []byte(owedMarkBody(k)), 0o600)
	if errors.Is(err, unix.ENOENT) {
		if err = root.MkdirAll(owedDirName, 0o700); err == nil {
			err = root.WriteFile(owedMarkName(k), []byte(owedMarkBody(k)), 0o600)
		}
	}
	if err != nil {
		s.log.Warn("owed file not marked on its tier: a restart before it reaches the share leaves it there only",
			"key", k.String(), "tier", d.Name(), "err", err)
	}
}

// unmarkOwed drops k's marks once no shared tier owes it.
func (s *Stack) unmarkOwed(k format.Key) {
	for _, d := range s.dirs {
		if d.IsOwed(k) {
			return
		}
	}
	for _, d := range s.dirs {
		if !d.Shared() {
			_ = d.Root().Unlink(owedMarkName(k)) // (none there: fine)
		}
	}
}

// paid forgets k as owed to sd, and its marks when no other shared tier
// owes it.
func (s *Stack) paid(sd tier.Lower, k format.Key) {
	sd.Paid(k)
	s.unmarkOwed(k)
}

// loadOwed owes the shared tiers again every file marked on a private
// tier: those a daemon killed before had not copied there. A mark that
// names no key is removed.
func (s *Stack) loadOwed() {
	if !s.HasShared() {
		return
	}
	n := 0
	for _, d := range s.dirs {
		if d.Shared() {
			continue
		}
		names, err := d.Root().ReadDirNames(owedDirName)
		if err != nil {
			continue
		}
		for _, name := range names {
			rel := owedDirName + "/" + name
			b, err := d.Root().ReadFile(rel)
			var k format.Key
			if err == nil {
				k, err = parseOwedMark(string(b))
			}
			if err != nil || owedMarkName(k) != rel {
				s.log.Warn("owed mark not understood: removed", "tier", d.Name(), "mark", name, "err", err)
				_ = d.Root().Unlink(rel)
				continue
			}
			for _, sd := range s.dirs {
				sd.Owe(k) // nothing on a private tier
			}
			n++
		}
	}
	if n > 0 {
		s.log.Info("files owed to the shared tier before the restart: copied there once it is up", "files", n)
	}
}
