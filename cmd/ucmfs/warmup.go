package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"
)

func init() { register(warmupCommand) }

// warmupBatch is how many ids go in one prefetch request (the protocol
// takes up to 100 000; smaller requests let the progress move).
const warmupBatch = 1000

// warmupCommand is `ucmfs warmup`: prefetch a model's blocks into the
// memory tier and wait until they are there.
func warmupCommand() *cli.Command {
	return &cli.Command{
		Name:      "warmup",
		Usage:     "load blocks of a model into the memory tier ahead of need, with progress",
		ArgsUsage: "MOUNTPOINT MODEL (ID... | --from FILE)",
		Description: "Sends the ids (arguments, or --from FILE, one per line; '-' is stdin) to\n" +
			"MOUNTPOINT/.ucm/prefetch in batches (in a files model, the files' paths in the model\n" +
			"instead of ids), then follows the promotions in .ucm/stats until\n" +
			"none is pending, drawing a progress bar on stderr. Prints queued, missing, promoted\n" +
			"and failed counts at the end. Ids no tier holds are counted as missing, not errors.\n" +
			"The ids are required (the blocks an engine will need, not the whole model); a mount point\n" +
			"or model that does not exist is an error, and prints no counts.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", TakesFile: true, Usage: "read ids from `FILE`, one per line ('-': stdin)"},
			&cli.BoolFlag{Name: "no-wait", Usage: "return once the ids are queued"},
			&cli.DurationFlag{Name: "timeout", Value: time.Hour, Usage: "give up waiting after `DURATION`"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() < 2 {
				return usageErrorf("warmup: want MOUNTPOINT MODEL (ID... | --from FILE), got %d arguments", cmd.Args().Len())
			}
			mnt, model := cmd.Args().Get(0), cmd.Args().Get(1)
			if err := requireMount(mnt); err != nil {
				return err
			}
			ids, err := warmupIDs(cmd.Args().Slice()[2:], cmd.String("from"), cmd.Root().Reader, filesModel(mnt, model))
			if err != nil {
				return err
			}
			w := &warmup{mnt: mnt, model: model, progress: cmd.Root().ErrWriter}
			res, err := w.run(ctx, ids, !cmd.Bool("no-wait"), cmd.Duration("timeout"))
			if err != nil && res.queued == 0 {
				return err // nothing was asked: the error alone
			}
			fmt.Fprintf(cmd.Root().Writer, "queued=%d missing=%d promoted=%d failed=%d\n", res.queued, res.missing, res.promoted, res.failed)
			return err
		},
	}
}

// filesModel reports whether model of the mount at mnt has a files
// layout (its user.ucm.layout): a tree of Files, named by path.
func filesModel(mnt, model string) bool {
	buf := make([]byte, 64)
	n, err := unix.Getxattr(filepath.Join(mnt, model), "user.ucm.layout", buf)
	if err != nil {
		return false
	}
	l, ok := registry.ByName(string(buf[:n]))
	return ok && l.Tree()
}

// warmupIDs checks and returns the ids of the arguments, or of the file:
// block ids, or with paths the paths of a files model's files.
func warmupIDs(args []string, from string, stdin io.Reader, paths bool) ([]string, error) {
	if from != "" && len(args) > 0 {
		return nil, usageErrorf("warmup: give ids as arguments or with --from, not both")
	}
	ids := args
	if from != "" {
		var r io.Reader = stdin
		if from != "-" {
			f, err := os.Open(from)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			r = f
		}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				ids = append(ids, line)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	if len(ids) == 0 {
		return nil, usageErrorf("warmup: no ids: give the blocks to load as arguments or with --from FILE (ucmfs hash prints a prompt's)")
	}
	for _, id := range ids {
		if err := checkWarmupID(id, paths); err != nil {
			return nil, usageErrorf("warmup: %q: %v", id, err)
		}
	}
	return ids, nil
}

// checkWarmupID checks one id, or with paths one path of a files model:
// a path the control files' requests can carry (no space or tab, which
// separate their tokens).
func checkWarmupID(id string, paths bool) error {
	if !paths {
		_, err := format.ParseID(id)
		return err
	}
	if strings.ContainsAny(id, " \t") {
		return errors.New("a path with a space or tab cannot be named in a .ucm/prefetch request")
	}
	return format.ValidateFilePath(id)
}

// warmup is one `ucmfs warmup` run.
type warmup struct {
	mnt, model string
	progress   io.Writer // the bar goes here
}

// warmupResult counts what happened.
type warmupResult struct{ queued, missing, promoted, failed int64 }

// prefetchCounters are the stats fields warmup follows.
type prefetchCounters struct {
	Promoted int64 `json:"prefetch_promoted"`
	Failed   int64 `json:"prefetch_failed"`
	Pending  int64 `json:"prefetch_pending"`
}

// counters reads the prefetch counters of the mount.
func (w *warmup) counters() (prefetchCounters, error) {
	var c prefetchCounters
	raw, err := readStats(w.mnt)
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	return c, err
}

// run queues ids, then (when wait) follows the promotions until none is
// pending, the timeout passes or ctx ends.
func (w *warmup) run(ctx context.Context, ids []string, wait bool, timeout time.Duration) (warmupResult, error) {
	var res warmupResult
	before, err := w.counters()
	if err != nil {
		return res, err
	}
	f, err := os.OpenFile(filepath.Join(w.mnt, ".ucm", "prefetch"), os.O_RDWR, 0)
	if err != nil {
		return res, fmt.Errorf("warmup: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 256)
	for i := 0; i < len(ids); i += warmupBatch {
		batch := ids[i:min(i+warmupBatch, len(ids))]
		if _, err := fmt.Fprintf(f, "%s %s\n", w.model, strings.Join(batch, " ")); err != nil {
			return res, fmt.Errorf("warmup: prefetch: %w", err)
		}
		n, err := f.Read(buf)
		if err != nil {
			return res, fmt.Errorf("warmup: prefetch: %w", err)
		}
		var q, m int64
		if _, err := fmt.Sscanf(string(buf[:n]), "ok queued=%d missing=%d", &q, &m); err != nil {
			return res, fmt.Errorf("warmup: prefetch answered %q", strings.TrimSpace(string(buf[:n])))
		}
		res.queued, res.missing = res.queued+q, res.missing+m
		w.bar("queued", int64(i+len(batch)), int64(len(ids)))
	}
	fmt.Fprintln(w.progress)
	if !wait || res.queued == 0 {
		return res, nil
	}
	deadline := time.Now().Add(timeout)
	for {
		c, err := w.counters()
		if err != nil {
			return res, err
		}
		res.promoted, res.failed = c.Promoted-before.Promoted, c.Failed-before.Failed
		done := min(res.promoted+res.failed, res.queued)
		w.bar("in memory", done, res.queued)
		if c.Pending == 0 || done >= res.queued {
			fmt.Fprintln(w.progress)
			return res, nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(w.progress)
			return res, errors.New("warmup: timed out waiting for the promotions")
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(w.progress)
			return res, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bar redraws a text progress bar: "\r[#####.....]  50% 500/1000 queued".
func (w *warmup) bar(what string, done, total int64) {
	const width = 30
	filled := int(width * done / max(total, 1))
	fmt.Fprintf(w.progress, "\r[%s%s] %3d%% %d/%d %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		100*done/max(total, 1), done, total, what)
}
