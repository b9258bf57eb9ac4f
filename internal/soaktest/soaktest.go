// Package soaktest is the test support the crash soaks share (the stack's,
// tiers/soak_test.go, and the store's over it, store/soak_test.go): how
// long they run, which open findings fail a run, the faults and power
// cuts they arm on a crash disk (package crashfs), and the disk and the
// memory tier's directory brought back after a cut.
package soaktest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"golang.org/x/sys/unix"
)

// Seconds is how long a soak runs: UCMFS_SOAK_SECONDS (make soak
// SECONDS=N), or 3 s (make test).
func Seconds() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("UCMFS_SOAK_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 3 * time.Second
}

// Seed is the one seed UCMFS_SOAK_SEED asks a soak to replay; ok is
// false when it asks none.
func Seed() (seed uint64, ok bool, err error) {
	s := os.Getenv("UCMFS_SOAK_SEED")
	if s == "" {
		return 0, false, nil
	}
	seed, err = strconv.ParseUint(s, 10, 64)
	return seed, err == nil, err
}

// LoadAvg is the machine's load average, for a soak's line of
// operations per second.
func LoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// Strict reports whether UCMFS_SOAK_STRICT makes the open finding class
// fail a run: "1" all of them, or a comma-separated list of classes.
func Strict(class string) bool {
	v := os.Getenv("UCMFS_SOAK_STRICT")
	return v == "1" || slices.Contains(strings.Split(v, ","), class)
}

// Fault arms an error (EIO, ENOSPC or EDQUOT, drawn from r) at one of the
// next 20 operations of disk, and returns the line a replay logs.
func Fault(r *rand.Rand, disk *crashfs.Disk) string {
	errno := []unix.Errno{unix.EIO, unix.ENOSPC, unix.EDQUOT}[r.IntN(3)]
	at := 1 + r.Int64N(20)
	disk.FailAt(at, "", errno)
	return fmt.Sprintf("fault %v at the %dth operation of the disk", errno, at)
}

// Cut arms a power cut at one of the next 60 operations of disk, and
// returns the line a replay logs.
func Cut(r *rand.Rand, disk *crashfs.Disk) string {
	at := 1 + r.Int64N(60)
	disk.CutAt(at)
	return fmt.Sprintf("power cut armed at the %dth operation of the disk", at)
}

// Restore brings disk back after a power cut (whatever closed on it
// closed first) with only what was durable, its faults cleared, and
// empties shm, the memory tier's directory: its RAM is gone with the
// power.
func Restore(disk *crashfs.Disk, shm string) error {
	disk.SetFault(nil)
	if err := disk.Restore(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := os.RemoveAll(shm); err != nil {
		return err
	}
	return os.MkdirAll(shm, 0o700)
}
