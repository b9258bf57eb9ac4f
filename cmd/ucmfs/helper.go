package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
)

// The mount helper: mount(8) runs /sbin/mount.fuse.ucmfs for
// `mount -t fuse.ucmfs SOURCE MNT -o OPTS` and for an fstab line of type
// fuse.ucmfs, with the arguments
//
//	mount.fuse.ucmfs SOURCE MOUNTPOINT [-sfnv] [-N NS] [-o OPTS]
//
// The installed helper is a link to the ucmfs binary, which recognises
// itself by the name it was run as. Each option KEY[=VALUE] of OPTS is the
// mount flag --KEY[ VALUE] with '_' for '-' (memory=8GiB, tier=nvme:/d,
// allow_other, log_level=warn); the generic options mount(8) adds (rw,
// nosuid, nodev, noatime, _netdev, nofail, x-systemd.*, ...) are accepted
// and left to the kernel and mount(8). SOURCE is free text ("ucmfs"),
// unless it is an absolute path to a file: then it is the --config file
// (a relative name is never read: mount(8) runs the helper from any
// directory, where a file of that name may be anything). The helper starts
// the daemon in the background and returns once the mount is ready.

// helperNames are the names under which the binary acts as the helper.
var helperNames = []string{"mount.fuse.ucmfs", "mount.ucmfs"}

// isMountHelper reports whether argv0 names the mount helper.
func isMountHelper(argv0 string) bool { return slices.Contains(helperNames, filepath.Base(argv0)) }

// genericMountOptions are options of mount(8) and the kernel that say
// nothing to ucmfs; the helper accepts and drops them.
var genericMountOptions = map[string]bool{
	"rw": true, "defaults": true, "auto": true, "noauto": true, "user": true, "nouser": true, "users": true,
	"owner": true, "group": true, "nofail": true, "_netdev": true, "suid": true, "nosuid": true, "dev": true,
	"nodev": true, "exec": true, "noexec": true, "atime": true, "noatime": true, "relatime": true,
	"strictatime": true, "diratime": true, "nodiratime": true, "async": true, "lazytime": true,
	"nolazytime": true, "silent": true, "loud": true, "comment": true,
}

// helperOnlyOptions are the helper's own options, not mount flags.
var helperOnlyOptions = []string{"log_file"}

// notHelperOptions are mount flags that make no sense as mount options
// (the helper already runs the daemon in the background).
var notHelperOptions = []string{"background", "d", "print-config", "help", "h"}

// helperRequest is a parsed helper command line.
type helperRequest struct {
	MountArgs []string // the `ucmfs mount` arguments, MOUNTPOINT last
	LogFile   string   // where the daemon's stderr goes; "" for the default
	Fake      bool     // -f: do everything but mount
}

// parseHelperArgs turns the helper's arguments (after argv[0]) into a
// `ucmfs mount` command line.
func parseHelperArgs(args []string) (helperRequest, error) {
	var req helperRequest
	var pos, opts []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-o" || a == "-N" || a == "-t":
			if i+1 >= len(args) {
				return req, fmt.Errorf("%s needs a value", a)
			}
			if a == "-o" {
				opts = append(opts, strings.Split(args[i+1], ",")...)
			}
			i++
		case strings.HasPrefix(a, "-o"):
			opts = append(opts, strings.Split(a[2:], ",")...)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range a[1:] {
				switch c {
				case 's', 'n', 'v':
				case 'f':
					req.Fake = true
				default:
					return req, fmt.Errorf("unknown option -%c", c)
				}
			}
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 {
		return req, fmt.Errorf("want SOURCE MOUNTPOINT, got %d arguments", len(pos))
	}
	flags := mountFlagKinds()
	var mountArgs []string
	if fi, err := os.Stat(pos[0]); err == nil && filepath.IsAbs(pos[0]) && fi.Mode().IsRegular() {
		mountArgs = append(mountArgs, "--config", pos[0])
	}
	for _, o := range opts {
		key, value, hasValue := strings.Cut(o, "=")
		name := strings.ReplaceAll(key, "_", "-")
		isBool, known := flags[name]
		known = known && !slices.Contains(notHelperOptions, name)
		switch {
		case o == "":
		case key == "ro":
			return req, fmt.Errorf("option ro: ucmfs has no read-only mode")
		case key == "log_file":
			req.LogFile = value
		case genericMountOptions[key] || strings.HasPrefix(key, "x-"):
		case !known || name == "config" && !hasValue:
			return req, fmt.Errorf("unknown option %q; ucmfs options: %s (and the generic ones: rw, nosuid, nodev, noatime, _netdev, nofail, x-*, ...)",
				key, strings.Join(helperOptionNames(flags), ", "))
		case isBool && hasValue:
			mountArgs = append(mountArgs, "--"+name+"="+value)
		case isBool:
			mountArgs = append(mountArgs, "--"+name)
		case !hasValue:
			return req, fmt.Errorf("option %s needs a value (%s=...)", key, key)
		default:
			mountArgs = append(mountArgs, "--"+name, value)
		}
	}
	req.MountArgs = append(mountArgs, pos[1])
	return req, nil
}

// mountFlagKinds maps every `ucmfs mount` flag name to whether it is a
// boolean flag.
func mountFlagKinds() map[string]bool {
	kinds := map[string]bool{}
	for _, f := range mountCommand().Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			kinds[n] = isBool
		}
	}
	return kinds
}

// helperOptionNames lists the options the helper maps, as mount options.
func helperOptionNames(flags map[string]bool) []string {
	names := slices.Clone(helperOnlyOptions)
	for n := range flags {
		if len(n) > 1 && !slices.Contains(notHelperOptions, n) {
			names = append(names, strings.ReplaceAll(n, "-", "_"))
		}
	}
	slices.Sort(names)
	return slices.Compact(names) // log_file is a mount flag and the helper's own
}

// runMountHelper is the helper's main: exit status 0 once mounted, 1 for
// bad usage, 32 (mount(8)'s "mount failure") when the daemon failed.
func runMountHelper(ctx context.Context, args []string, stderr io.Writer) int {
	req, err := parseHelperArgs(args[1:])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", filepath.Base(args[0]), err)
		return 1
	}
	// Check the whole command line (and config file) before forking.
	check := newMountCommand(func(context.Context, mountConfig, io.Writer) error { return nil })
	check.Writer, check.ErrWriter = io.Discard, stderr
	setUsageErrors(check)
	check.ExitErrHandler = func(context.Context, *cli.Command, error) {}
	if err := check.Run(ctx, append([]string{"mount"}, req.MountArgs...)); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", filepath.Base(args[0]), err)
		return 1
	}
	if req.Fake {
		return 0
	}
	if err := startDaemon(ctx, req); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", filepath.Base(args[0]), err)
		return 32
	}
	return 0
}
