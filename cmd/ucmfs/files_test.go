package main

import (
	"os"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
)

// testIDs are real chain ids, distinct and in different shards.
var testIDs = format.Chain(llamaMeta, 1, []uint32{1, 2, 3, 4, 5, 6, 7, 8})

// blockFile is a valid 2-layer float16 block of 4 tokens, 2 heads of dim 8.
func blockFile(id format.ID) []byte { return tiertest.BlockFile(id) }

// reprFile is a valid mean-pooled sidecar of blockFile(id).
func reprFile(id format.ID) []byte { return tiertest.ReprFile(id) }

// writeAt writes data at dir/rel, creating directories.
func writeAt(t *testing.T, dir, rel string, data []byte) string {
	return tiertest.WriteFile(t, dir, rel, data)
}

func pathExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
