package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// fuseHelpHint is what a user without root needs to mount.
const fuseHelpHint = "mounting as a user other than root needs the fusermount3 helper: " +
	"install fuse3 (Debian/Ubuntu: apt-get install fuse3; Fedora/RHEL: dnf install fuse3), " +
	"or run ucmfs mount as root"

// mountError words a failed fs.Mount of mnt. A missing fusermount helper
// (go-fuse runs it when not root) becomes a hint that says what to
// install, instead of `exec: "/bin/fusermount": ... no such file`.
func mountError(mnt string, err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) && strings.Contains(ee.Name, "fusermount") {
		return fmt.Errorf("mount %s: no fusermount helper found (%v): %s", mnt, ee.Err, fuseHelpHint)
	}
	return fmt.Errorf("mount %s: %w", mnt, err)
}
