package format

import "strings"

// Staging names: the in-progress names writers use before renaming a file
// to its final name (docs/spec.md §6):
//
//	<final>.tmp        UCM's PosixStore and many engines (<id>.bin.tmp)
//	.<final>.XXXXXX    rsync's temporary file (mkstemp: a dot, the final
//	                   name, a dot, six or more letters and digits)
//
// where <final> is a final name of the shard (<id>.bin, <id>.repr).

// StagingSuffix ends a staging name of the first form.
const StagingSuffix = ".tmp"

// ParseStagingName reports whether name is a staging name in shard hh,
// and the final name it stands for (which ParseFileName accepts).
func ParseStagingName(hh, name string) (final string, ok bool) {
	switch {
	case strings.HasSuffix(name, StagingSuffix):
		final = strings.TrimSuffix(name, StagingSuffix)
	case strings.HasPrefix(name, ".") && len(name) > 1:
		rest := name[1:]
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 || len(rest)-i-1 < 6 || !alnum(rest[i+1:]) {
			return "", false
		}
		final = rest[:i]
	default:
		return "", false
	}
	if _, _, err := ParseFileName(hh, final); err != nil {
		return "", false
	}
	return final, true
}

// alnum reports whether s is letters and digits only.
func alnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
