package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"
)

func init() { register(quotaCommand) }

// quotaCommand is `ucmfs quota MOUNTPOINT MODEL [SIZE|none]`: a model's
// quota and use, and setting it, without setfattr.
func quotaCommand() *cli.Command {
	return &cli.Command{
		Name:      "quota",
		Usage:     "show or set a model's quota",
		ArgsUsage: "MOUNTPOINT MODEL [SIZE|none]",
		Description: "Without SIZE it shows the model's quota, the bytes and blocks it holds. With SIZE\n" +
			"(10GiB, 500MB, bytes) it sets the quota; none (or 0) clears it. Root or the daemon's user\n" +
			"sets, raises and clears quotas; a model's owner may only lower its own. A publish past the\n" +
			"quota fails with EDQUOT. The quota is the model's user.ucm.quota (docs/xattrs.md).",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			args := cmd.Args().Slice()
			if len(args) < 2 || len(args) > 3 {
				return usageErrorf("quota: want MOUNTPOINT MODEL [SIZE|none] (see 'ucmfs quota --help')")
			}
			if err := requireMount(args[0]); err != nil {
				return err
			}
			dir := filepath.Join(args[0], args[1])
			if len(args) == 3 {
				if err := setQuota(dir, args[2]); err != nil {
					return err
				}
			}
			return showQuota(cmd.Root().Writer, dir, args[1])
		},
	}
}

// setQuota writes SIZE (or none) as the model's quota.
func setQuota(dir, size string) error {
	n := int64(0)
	if size != "none" {
		var err error
		if n, err = parseSize(size); err != nil || n < 0 {
			return usageErrorf("quota: size %q: want bytes or a size such as 10GiB, or none", size)
		}
	}
	err := unix.Setxattr(dir, "user.ucm.quota", []byte(strconv.FormatInt(n, 10)), 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EPERM):
		return fmt.Errorf("quota of %s: %w: root or the daemon's user sets, raises and clears quotas; a model's owner may only lower its own", dir, err)
	}
	return quotaErr(dir, err)
}

// showQuota prints the model's quota and use.
func showQuota(w interface{ Write([]byte) (int, error) }, dir, model string) error {
	var vals [3]int64
	for i, name := range []string{"quota", "bytes", "blocks"} {
		buf := make([]byte, 32)
		n, err := unix.Getxattr(dir, "user.ucm."+name, buf)
		if err != nil {
			return quotaErr(dir, err)
		}
		if vals[i], err = strconv.ParseInt(string(buf[:n]), 10, 64); err != nil {
			return fmt.Errorf("%s: user.ucm.%s is %q", dir, name, buf[:n])
		}
	}
	quota := "none"
	if vals[0] > 0 {
		quota = fmt.Sprintf("%s (%d bytes), %.1f%% used", humanize.IBytes(uint64(vals[0])), vals[0], 100*float64(vals[1])/float64(vals[0]))
	}
	_, err := fmt.Fprintf(w, "%s: quota %s; holds %s in %s blocks\n", model, quota, humanize.IBytes(uint64(vals[1])), humanize.Comma(vals[2]))
	return err
}

// quotaErr says what a failed xattr call on dir means.
func quotaErr(dir string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%s: no such model", dir)
	case errors.Is(err, syscall.ENODATA), errors.Is(err, syscall.ENOTSUP):
		return fmt.Errorf("%s is not a model of a ucmfs mount (no user.ucm.quota)", dir)
	}
	return fmt.Errorf("%s: %w", dir, err)
}
