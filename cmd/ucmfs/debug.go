package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
)

func init() { register(debugCommand) }

// debugCommand is `ucmfs debug MOUNTPOINT`: one file with what a bug
// report about a mount needs.
func debugCommand() *cli.Command {
	return &cli.Command{
		Name:      "debug",
		Usage:     "collect what a bug report needs about a mount into one .tar.gz",
		ArgsUsage: "MOUNTPOINT",
		Description: "Writes ucmfs-debug-<host>-<time>.tar.gz (or -o FILE) with: the version, the kernel and\n" +
			"FUSE settings (release, enable_uring), the mount's line of the mount table, .ucm/stats,\n" +
			"the daemon's command line and the last lines of its log, read where the daemon writes it\n" +
			"(its standard error: the log file of a --background or helper-started daemon; for a\n" +
			"terminal, a pipe or systemd's journal the bundle says where it goes: add journalctl\n" +
			"_PID=<pid> yourself). Nothing of the blocks is read. A dead or missing mount still gives\n" +
			"the rest.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the bundle to `FILE`"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageErrorf("debug: want MOUNTPOINT (see 'ucmfs debug --help')")
			}
			mnt, err := filepath.Abs(cmd.Args().First())
			if err != nil {
				return err
			}
			out := cmd.String("output")
			if out == "" {
				host, _ := os.Hostname()
				out = fmt.Sprintf("ucmfs-debug-%s-%s.tar.gz", host, time.Now().UTC().Format("20060102T150405Z"))
			}
			if err := writeDebugBundle(out, mnt); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.Root().Writer, "wrote %s\n", out)
			return err
		},
	}
}

// debugFiles are the bundle's files, each what it says or why it is not.
func debugFiles(mnt string) map[string][]byte {
	files := map[string][]byte{}
	note := func(name string, b []byte, err error) {
		if err != nil {
			b = append(b, fmt.Sprintf("(not read: %v)\n", err)...)
		}
		files[name] = b
	}
	var uname strings.Builder
	fmt.Fprintf(&uname, "ucmfs %s\n%s %s/%s\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, p := range []string{"/proc/sys/kernel/osrelease", "/sys/module/fuse/parameters/enable_uring", "/proc/sys/kernel/io_uring_disabled"} {
		b, err := os.ReadFile(p)
		fmt.Fprintf(&uname, "%s: %s", p, strings.TrimSpace(string(b)))
		if err != nil {
			fmt.Fprintf(&uname, "(%v)", err)
		}
		uname.WriteString("\n")
	}
	files["version.txt"] = []byte(uname.String())
	mi, err := os.ReadFile("/proc/self/mountinfo")
	note("mountinfo.txt", mountLines(mi, mnt), err)
	stats, err := os.ReadFile(filepath.Join(mnt, ".ucm", "stats"))
	note("stats.json", stats, err)
	cmdline, pid := daemonOf(mnt)
	files["daemon.txt"] = []byte(fmt.Sprintf("pid %d\n%s\n", pid, cmdline))
	files["log-tail.txt"] = daemonLog(mnt, pid)
	return files
}

// mountLines are the lines of mountinfo whose mount point is mnt (the
// fifth field, with the kernel's octal escapes of space, tab, newline
// and backslash): the mount asked about and any stacked on the same
// point, none of other daemons'.
func mountLines(mountinfo []byte, mnt string) []byte {
	esc := strings.NewReplacer(`\`, `\134`, " ", `\040`, "\t", `\011`, "\n", `\012`).Replace(mnt)
	var b bytes.Buffer
	for _, l := range strings.Split(string(mountinfo), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == esc {
			b.WriteString(l + "\n")
		}
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "(%s is not a mount point)\n", mnt)
	}
	return b.Bytes()
}

// daemonLog is the last 64 KiB of the log of the daemon pid serving mnt,
// which it writes to its standard error: the file that is, where it is
// one (--background and the mount helper point it at the log file),
// else a line saying where it goes (a terminal, a pipe, systemd's
// journal). Without a daemon, the log file a helper-started one had.
func daemonLog(mnt string, pid int) []byte {
	if pid == 0 {
		p, err := defaultLogFile(mnt)
		if err != nil {
			return []byte(fmt.Sprintf("(no daemon found, and no default log file: %v)\n", err))
		}
		b, err := tailFile(p, 64<<10)
		if err != nil {
			return []byte(fmt.Sprintf("(no daemon found; the default log file %s not read: %v)\n", p, err))
		}
		return append([]byte(p+" (the default log file; no daemon found):\n"), b...)
	}
	fd := fmt.Sprintf("/proc/%d/fd/2", pid)
	target, err := os.Readlink(fd)
	if err != nil {
		return []byte(fmt.Sprintf("(the daemon's standard error, %s, not read: %v)\n", fd, err))
	}
	if st, err := os.Stat(fd); err != nil || !st.Mode().IsRegular() {
		hint := ""
		if strings.HasPrefix(target, "socket:") {
			hint = fmt.Sprintf("; under systemd: journalctl _PID=%d", pid)
		}
		return []byte(fmt.Sprintf("(the daemon logs to its standard error, %s: not a file, not read here%s)\n", target, hint))
	}
	b, err := tailFile(fd, 64<<10)
	if err != nil {
		return []byte(fmt.Sprintf("(the daemon's log %s not read: %v)\n", target, err))
	}
	return append([]byte(target+":\n"), b...)
}

// daemonOf finds the ucmfs daemon serving mnt among the processes: its
// command line and pid (0 when none is found).
func daemonOf(mnt string) (string, int) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) < 3 || filepath.Base(args[0]) != "ucmfs" || args[1] != "mount" || args[len(args)-1] != mnt {
			continue
		}
		var pid int
		fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
		return strings.Join(args, " "), pid
	}
	return "(no ucmfs mount process found for this mount point)", 0
}

// tailFile returns the last n bytes of path.
func tailFile(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	_, err = f.ReadAt(b, off)
	return b, err
}

// writeDebugBundle writes debugFiles(mnt) as a .tar.gz to out.
func writeDebugBundle(out, mnt string) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	files := debugFiles(mnt)
	for _, name := range []string{"version.txt", "mountinfo.txt", "stats.json", "daemon.txt", "log-tail.txt"} {
		b, ok := files[name]
		if !ok {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: "ucmfs-debug/" + name, Mode: 0o644, Size: int64(len(b)), ModTime: time.Now()}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o600)
}
