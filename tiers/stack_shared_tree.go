package tiers

import (
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
)

// RevalidateTreeDir makes every shared tier's index of the directory rel
// ("": the root) of model's tree follow the share, at most once per TTL
// (dir.Tier.RevalidateTreeDir), and drops at once this host's copies of
// the Files it found gone (dropGone: a dirty or pinned one stays). It
// reports gone when every shared tier that is up no longer has the
// directory (another host moved or removed it) and neither memory nor a
// private tier holds a File in it: the caller may forget it
// (RemoveDir).
func (s *Stack) RevalidateTreeDir(model, rel string) (gone bool) {
	shared := 0
	gone = rel != ""
	for _, d := range s.dirs {
		if !d.Shared() || d.Health() == Down {
			continue
		}
		dropped, g := d.RevalidateTreeDir(model, rel)
		s.dropGone(dropped, false)
		gone = gone && g
		shared++
	}
	return shared > 0 && gone && !s.holdsTreeFiles(model, rel)
}

// holdsTreeFiles reports whether memory or a private tier holds a File of
// the directory rel of model's tree.
func (s *Stack) holdsTreeFiles(model, rel string) bool {
	shard := format.FileShard(rel)
	keys := s.mem.Index().ShardKeys(model, shard, nil)
	for _, d := range s.dirs {
		if !d.Shared() {
			keys = d.Index().ShardKeys(model, shard, keys)
		}
	}
	for _, k := range keys {
		if registry.Of(k).Tree() && k.ShardDir() == rel {
			return true
		}
	}
	return false
}
