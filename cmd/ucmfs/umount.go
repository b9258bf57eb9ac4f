package main

import (
	"context"
	"encoding/json"
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
			flushed := ""
			if !cmd.Bool("no-flush") {
				before := dirtyOf(mnt)
				progress := func() {
					if now := dirtyOf(mnt); now.files > 0 {
						fmt.Fprintf(cmd.Root().ErrWriter, "ucmfs umount: flushing: %d blocks (%s) still only in memory\n", now.files, formatSize(now.bytes))
					}
				}
				if err := flushAll(ctx, mnt, cmd.Duration("timeout"), progress); err != nil {
					return fmt.Errorf("umount: %w (nothing unmounted; --no-flush skips the flush)", err)
				}
				flushed = fmt.Sprintf("flushed %d blocks (%s) that were only in memory; ", before.files, formatSize(before.bytes))
			}
			if err := unmountPath(mnt, cmd.Bool("lazy")); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.Root().Writer, "ucmfs umount: %sunmounted %s\n", flushed, mnt)
			return err
		},
	}
}

// dirty is what a mount holds only in memory.
type dirty struct{ files, bytes int64 }

// dirtyOf reads the dirty blocks of mnt from its stats (zero when they do
// not read).
func dirtyOf(mnt string) dirty {
	raw, err := readStats(mnt)
	if err != nil {
		return dirty{}
	}
	var st struct {
		Files int64 `json:"dirty_files"`
		Bytes int64 `json:"dirty_bytes"`
	}
	if json.Unmarshal(raw, &st) != nil {
		return dirty{}
	}
	return dirty{st.Files, st.Bytes}
}

// flushProgress is how often umount reports a flush still running.
const flushProgress = 2 * time.Second

// flushAll asks mnt/.ucm/flush for "all" and waits, at most timeout, for
// "ok flushed" (docs/control.md), calling progress every flushProgress
// while it waits.
func flushAll(ctx context.Context, mnt string, timeout time.Duration, progress func()) error {
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
	tick := time.NewTicker(flushProgress)
	defer tick.Stop()
	limit := time.After(timeout)
	for {
		select {
		case a := <-done:
			if a.err != nil {
				return fmt.Errorf("flush: %w", a.err)
			}
			if a.line != "ok flushed" {
				return fmt.Errorf("flush: the daemon answered %q", a.line)
			}
			return nil
		case <-tick.C:
			progress()
		case <-limit:
			return fmt.Errorf("flush: no answer after %v", timeout)
		case <-ctx.Done():
			return fmt.Errorf("flush: %w", ctx.Err())
		}
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
