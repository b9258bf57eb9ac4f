package vfs

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// The hidden names of O_TMPFILE files of files models (fs/filesdir/tmpfile.go):
// no lookup or listing shows them.

// tmpfilePrefix starts the hidden staging name of an O_TMPFILE file.
const tmpfilePrefix = ".ucmfs-tmpfile-"

// tmpfileSeq numbers the tmpfiles of the mount.
var tmpfileSeq atomic.Uint64

// IsTmpfileName reports whether name is a tmpfile's hidden name.
func IsTmpfileName(name string) bool { return strings.HasPrefix(name, tmpfilePrefix) }

// TmpfileName is a new hidden staging name for an O_TMPFILE file.
func TmpfileName() string { return fmt.Sprintf("%s%d.tmp", tmpfilePrefix, tmpfileSeq.Add(1)) }
