package store

import (
	"errors"
	"fmt"
	"os"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
)

// Models belong to users. A model directory is owned by the uid and gid of
// the process that made it (mkdir), with the permission bits mkdir asked
// for (the kernel applied the umask); chmod and chown change them. The
// front end shows them on the model, its shard directories and its files,
// and the kernel checks them (fs: default_permissions); the store keeps
// them across restarts in the model's settings record (Settings.Owner).
// A model with none (made by an older version, or found on a tier)
// belongs to the daemon's user, mode 0755, as before.

// ModelOwner is who owns a model, and its permission bits.
type ModelOwner struct {
	Uid  uint32 `json:"uid"`
	Gid  uint32 `json:"gid"`
	Mode uint32 `json:"mode"` // permission bits (07777)
}

// ErrNotOwner: the caller is neither the model's owner nor root (EPERM).
var ErrNotOwner = errors.New("not the owner of the model")

// daemonOwner is the owner of a model without an owner in its settings.
var daemonOwner = ModelOwner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Mode: 0o755}

// unreadableOwner is the owner of a model whose settings record cannot be
// read: the daemon's, 0700, so that a model whose owner is not known is
// closed to everyone else (fail closed) until the record reads again.
var unreadableOwner = ModelOwner{Uid: daemonOwner.Uid, Gid: daemonOwner.Gid, Mode: 0o700}

// Owner returns model's owner and mode.
func (ms Models) Owner(model string) ModelOwner {
	if o := ms.s.modelSettings(model).Owner; o != nil {
		return *o
	}
	return daemonOwner
}

// SetOwner records model's owner and mode, durably (the daemon's
// user with mode 0755, the default, is recorded as no owner: a model made
// so keeps having no settings record).
func (ms Models) SetOwner(model string, o ModelOwner) error {
	o.Mode &= 0o7777
	return ms.s.updateSettings(model, func(v *Settings) error {
		v.Owner = &o
		if o == daemonOwner {
			v.Owner = nil // the default needs no record
		}
		return nil
	})
}

// CheckOwner allows uid to change model's settings: its owner or root;
// else ErrNotOwner.
func (ms Models) CheckOwner(model string, uid uint32) error {
	if uid == 0 || uid == ms.Owner(model).Uid {
		return nil
	}
	return fmt.Errorf("model %s: uid %d: %w", model, uid, ErrNotOwner)
}

// Access bits for Models.Permits: a mode's permission bits for one class.
const (
	AccessRead  = 4 // list the model's directories
	AccessWrite = 2 // create and remove files in them
	AccessExec  = 1 // reach files by name (stat, open)
)

// Permits reports whether a caller may do want (Access bits) on
// model's directories, by the rules the kernel applies to the mount
// (default_permissions, generic_permission): root may do anything; the
// owner has the owner bits, a member of the model's group (its gid, or
// inGroup for its other groups; nil: none) the group bits, anyone else the
// other bits. The control files apply it to requests that name a model, so
// that they give no more than the same request through the mount would.
func (ms Models) Permits(model string, uid, gid uint32, inGroup func(uint32) bool, want uint32) bool {
	return permits(ms.Owner(model), uid, gid, inGroup, want)
}

// Permission bits of the published files of a model, before its mode
// masks them.
const (
	// PublishedPerm is the mode of a published block or sidecar: read-only.
	PublishedPerm = 0o444
	// FilesPerm is the mode of a published File of a files model: who may
	// write the model may replace its files, by a rename over them or by
	// opening them for writing (a new version), and the kernel checks the
	// latter against this mode (default_permissions).
	FilesPerm = 0o666
)

// FileOwner is the owner and mode the published files of model of kind
// show (the front end's attributes, which the kernel checks): the model's
// owner and group; PublishedPerm masked by the model's read bits, or for
// a File of a files model FilesPerm masked by the model's mode.
func (ms Models) FileOwner(model string, kind format.Kind) ModelOwner {
	return ms.fileOwner(model, registry.Of(format.Key{Kind: kind}).Tree())
}

// fileOwner is FileOwner of a file of a tree of Files (tree) or of a
// block.
func (ms Models) fileOwner(model string, tree bool) ModelOwner {
	o := ms.Owner(model)
	if tree {
		o.Mode = FilesPerm & o.Mode
	} else {
		o.Mode = PublishedPerm & (o.Mode | 0o7000) & 0o444
	}
	return o
}

// FilesPermit reports whether a caller may do want (Access bits) on the
// published files of model (Models.FileOwner's mode), by the rules of
// Models.Permits: the check the kernel makes of an open of one of them.
// Every published file of a model has the same owner and mode, so one
// answer holds for all of them. The control requests that return a file's
// content, or scores computed from it (gpu load, topk), ask it for
// AccessRead: search permission on the model, which lookup, prefetch and
// flush need, tells only which files exist.
func (ms Models) FilesPermit(model string, uid, gid uint32, inGroup func(uint32) bool, want uint32) bool {
	return permits(ms.fileOwner(model, ms.LayoutOf(model).Tree()), uid, gid, inGroup, want)
}

// permits applies the kernel's rule (generic_permission) to a file or
// directory of owner and mode o.
func permits(o ModelOwner, uid, gid uint32, inGroup func(uint32) bool, want uint32) bool {
	if uid == 0 {
		return true
	}
	if uid == o.Uid {
		return (o.Mode>>6)&want == want
	}
	group, other := (o.Mode>>3)&want == want, o.Mode&want == want
	if group == other {
		// Membership would not change the answer: no look at the
		// caller's other groups (a read of /proc per request on the
		// control files' path, for the usual 0755 or 0700 model).
		return group
	}
	if gid == o.Gid || inGroup != nil && inGroup(o.Gid) {
		return group
	}
	return other
}
