package tiers

import (
	"os"
	"testing"
)

// TestMain lets the test binary double as the crash child of
// TestStackKill9: when UCMFS_CRASH_CHILD names a directory, it runs
// crashChild there (until killed) instead of the tests.
func TestMain(m *testing.M) {
	if dir := os.Getenv("UCMFS_CRASH_CHILD"); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}
