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
			"the daemon's command line and the last lines of its log file (a --background daemon's; a\n" +
			"systemd one logs to the journal: add journalctl -u 'ucmfs@*' yourself). Nothing of the\n" +
			"blocks is read. A dead or missing mount still gives the rest.",
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
	var lines []string
	for _, l := range strings.Split(string(mi), "\n") {
		if strings.Contains(l, "fuse.ucmfs") || strings.Contains(l, " "+mnt+" ") {
			lines = append(lines, l)
		}
	}
	note("mountinfo.txt", []byte(strings.Join(lines, "\n")+"\n"), err)
	stats, err := os.ReadFile(filepath.Join(mnt, ".ucm", "stats"))
	note("stats.json", stats, err)
	cmdline, pid := daemonOf(mnt)
	files["daemon.txt"] = []byte(fmt.Sprintf("pid %d\n%s\n", pid, cmdline))
	if logPath, err := defaultLogFile(mnt); err == nil {
		b, err := tailFile(logPath, 64<<10)
		note("log-tail.txt", append([]byte(logPath+":\n"), b...), err)
	}
	return files
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
