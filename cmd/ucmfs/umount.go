package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"
)

func init() { register(umountCommand) }

// umountCommand is `ucmfs umount`: flush, then unmount.
func umountCommand() *cli.Command {
	return &cli.Command{
		Name:      "umount",
		Usage:     "make every block durable, then unmount a ucmfs mount",
		ArgsUsage: "MOUNTPOINT",
		Description: "Asks MOUNTPOINT/.ucm/flush for 'all' (the answer comes once every block only in\n" +
			"memory is on the first directory tier and the tiers are synced), then unmounts;\n" +
			"the daemon then exits on its own. A busy mount (files open in it) is refused\n" +
			"unless --lazy detaches it. As root the umount(2) system call is used, otherwise\n" +
			"fusermount3 -u.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "lazy", Aliases: []string{"l"}, Usage: "detach a busy mount (open files keep working until closed)"},
			&cli.BoolFlag{Name: "no-flush", Usage: "unmount without asking for the flush first (the daemon still flushes at exit)"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "give up on the flush after `DURATION`"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usageErrorf("umount: want exactly one MOUNTPOINT, got %d arguments", cmd.Args().Len())
			}
			mnt, err := filepath.Abs(cmd.Args().First())
			if err != nil {
				return err
			}
			if fstype, ok := mountedAt(mnt); !ok || !strings.HasPrefix(fstype, "fuse") {
				return fmt.Errorf("umount: %s is not a mounted ucmfs", mnt)
			}
			if !cmd.Bool("no-flush") {
				if err := flushAll(ctx, mnt, cmd.Duration("timeout")); err != nil {
					return fmt.Errorf("umount: %w (nothing unmounted; --no-flush skips the flush)", err)
				}
			}
			return unmountPath(mnt, cmd.Bool("lazy"))
		},
	}
}

// flushAll asks mnt/.ucm/flush for "all" and waits, at most timeout, for
// "ok flushed" (docs/control.md).
func flushAll(ctx context.Context, mnt string, timeout time.Duration) error {
	path := filepath.Join(mnt, ".ucm", "flush")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s is not a ucmfs mount (no .ucm/flush)", mnt)
	} else if err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	type answer struct {
		line string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		buf := make([]byte, 4096)
		_, err := f.Write([]byte("all\n"))
		n := 0
		if err == nil {
			n, err = f.Read(buf)
		}
		f.Close() // before the answer: an open file would keep the mount busy
		done <- answer{strings.TrimSpace(string(buf[:n])), err}
	}()
	select {
	case a := <-done:
		if a.err != nil {
			return fmt.Errorf("flush: %w", a.err)
		}
		if a.line != "ok flushed" {
			return fmt.Errorf("flush: the daemon answered %q", a.line)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("flush: no answer after %v", timeout)
	case <-ctx.Done():
		return fmt.Errorf("flush: %w", ctx.Err())
	}
}

// unmountPath unmounts mnt: umount(2) as root, fusermount3 -u otherwise.
func unmountPath(mnt string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = unix.MNT_DETACH
		}
		err := unix.Unmount(mnt, flags)
		if errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("umount %s: busy (files are open in it): close them, or use --lazy", mnt)
		}
		if err != nil {
			return fmt.Errorf("umount %s: %w", mnt, err)
		}
		return nil
	}
	args := []string{"-u", mnt}
	if lazy {
		args = []string{"-u", "-z", mnt}
	}
	for _, bin := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(bin); err == nil {
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	return fmt.Errorf("umount %s: %s", mnt, fuseHelpHint)
}
