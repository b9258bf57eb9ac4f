package fs

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain runs the tests, then fails if any mount they made is still
// mounted.
func TestMain(m *testing.M) {
	code := m.Run()
	if left := leftMounts(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "mounts left behind: %v\n", left)
		code = 1
	}
	os.Exit(code)
}

// leftMounts returns the mount points of this binary still in
// /proc/self/mounts.
func leftMounts() []string {
	mounted.Lock()
	ours := make(map[string]bool, len(mounted.dirs))
	for _, d := range mounted.dirs {
		ours[d] = true
	}
	mounted.Unlock()
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var left []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 1 && ours[unescapeMount(fields[1])] {
			left = append(left, fields[1])
		}
	}
	return left
}
