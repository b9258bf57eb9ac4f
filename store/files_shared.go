package store

// A directory of a files model on a host with a shared tier: another
// host may move or remove it on the share. Its listing and its lookup
// check it there, at most once per TTL (tiers.Stack.RevalidateTreeDir):
// the files the share no longer has go from the listing, those another
// host published there come in it, and a directory the share no longer
// has, holding nothing of this host's, is forgotten (before, a directory
// found once was known for the run, and listed its files as they were).

// filesDirGone reports whether the directory dir of the files model is
// gone from the shared tiers, and forgets it then: nothing of it is
// being written here, and no tier of this host holds a file in it.
func (s *Store) filesDirGone(model, dir string) bool {
	if !s.stack.RevalidateTreeDir(model, dir) || s.writes.inShard(model, dir) {
		return false
	}
	if err := s.stack.RemoveDir(model, dir); err != nil {
		return false // something of this host's is in it still
	}
	s.trees.remove(model, dir)
	s.dropDirPin(model, dir)
	return true
}
