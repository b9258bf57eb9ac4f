package files

import (
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/ucmfs/ucmfs/format"
)

// keptExts are the extensions of an engine's own small files: its run
// config, locks, logs, pid files.
var keptExts = []string{".json", ".lock", ".log", ".pid", ".yaml", ".yml", ".conf", ".config", ".toml", ".txt"}

// KeptFile reports whether the File k is one of an engine's own files
// rather than a KV block: its name starts with '.' (lock and probe files,
// UCM's GC files), or ends in one of keptExts. Such a file is never
// dropped by eviction (tiers.Stack.SetKeep): losing a block is a miss
// the engine recomputes, losing its config or a lock file another process
// holds is not. Everything else about it is a block's: it is tiered,
// checked and counted.
func KeptFile(k format.Key) bool {
	if k.Kind != format.File {
		return false
	}
	_, name := format.SplitFilePath(k.Name)
	if strings.HasPrefix(name, ".") {
		return true
	}
	for _, ext := range keptExts {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// StagingName reports whether name is a temporary name in a files
// model: it ends in ".tmp" (vLLM's and llm-d's <final>_<rand>.tmp,
// LMCache's <name>.tmp, UCM's <id>.tmp), holds ".tmp." (SGLang's
// <final>.tmp.<pid>.<tid>.<uuid>, UCM's .ucm_gc.config.tmp.<host>...), or
// is rsync's .<name>.XXXXXX, whose six letters and digits (mkstemp's)
// hold a digit or a capital (so that .ucm_gc.config is a final name). A
// temporary name taken for a final one still works: it publishes at its
// close and its rename moves it. (The store adds a ucmfs tier's own temp
// names, store.Models.Staging.)
func StagingName(name string) bool {
	if strings.HasSuffix(name, ".tmp") || strings.Contains(name, ".tmp.") {
		return true
	}
	if len(name) < 9 || name[0] != '.' {
		return false
	}
	i := strings.LastIndexByte(name, '.')
	if i < 2 || len(name)-i-1 != 6 {
		return false
	}
	mixed := false
	for _, c := range name[i+1:] {
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z':
			mixed = true
		case c >= 'a' && c <= 'z':
		default:
			return false
		}
	}
	return mixed
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
