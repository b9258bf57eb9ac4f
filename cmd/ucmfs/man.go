package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
)

func init() { register(manCommand) }

// manCommand is `ucmfs man`: the ucmfs(8) manual page, in roff, built from
// the same command tree as --help, so the two never disagree. `make
// install` writes it to share/man/man8/ucmfs.8.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:   "man",
		Usage:  "print the ucmfs(8) manual page (roff)",
		Hidden: true,
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Present() {
				return usageErrorf("man takes no arguments")
			}
			return writeMan(cmd.Root().Writer, cmd.Root())
		},
	}
}

// roffEscape escapes backslashes and hyphens (minus signs in roff).
func roffEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\e`), "-", `\-`)
}

// roff escapes text as roff lines, each ended by a newline; a line that
// starts with a dot or quote (a request) is protected.
func roff(s string) string {
	if s == "" {
		return ""
	}
	s = roffEscape(s)
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			line = `\&` + line
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// writeMan writes the manual page of root and its visible subcommands.
func writeMan(w io.Writer, root *cli.Command) error {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH UCMFS 8 \"\" \"ucmfs %s\" \"System Administration\"\n", versionString())
	b.WriteString(".SH NAME\nucmfs, mount.fuse.ucmfs \\- " + roff(root.Usage))
	b.WriteString(".SH SYNOPSIS\n.B ucmfs\n.I COMMAND\n[\\fIOPTIONS\\fR] [\\fIARGS\\fR]\n.br\n" +
		".B mount \\-t fuse.ucmfs\nucmfs \\fIMOUNTPOINT\\fR \\-o \\fIOPTIONS\\fR\n")
	b.WriteString(".SH DESCRIPTION\n" + roff(root.Description))
	b.WriteString(".SH COMMANDS\n")
	for _, c := range root.Commands {
		if c.Hidden {
			continue
		}
		fmt.Fprintf(&b, ".SS \"ucmfs %s %s\"\n%s", c.Name, roffEscape(c.ArgsUsage), roff(c.Usage))
		if c.Description != "" {
			b.WriteString(".PP\n" + roff(c.Description))
		}
		for _, f := range c.Flags {
			names := slices.Clone(f.Names())
			if names[0] == "help" {
				continue
			}
			for i, n := range names {
				if len(n) == 1 {
					names[i] = "-" + n
				} else {
					names[i] = "--" + n
				}
			}
			usage := ""
			if d, ok := f.(cli.DocGenerationFlag); ok {
				usage = d.GetUsage()
				if v := d.GetValue(); v != "" && d.TakesValue() {
					usage += " (default " + v + ")"
				}
			}
			fmt.Fprintf(&b, ".TP\n.B %s\n%s", roffEscape(strings.Join(names, ", ")), roff(strings.ReplaceAll(usage, "`", "")))
		}
	}
	b.WriteString(`.SH MOUNT HELPER
Installed as /sbin/mount.fuse.ucmfs, the binary lets mount(8) and /etc/fstab mount ucmfs:
.PP
.nf
ucmfs  /mnt/kv  fuse.ucmfs  memory=8GiB,tier=nvme:/nvme/ucm,allow_other,_netdev,nofail  0 0
.fi
.PP
Each option KEY[=VALUE] is the mount flag \-\-KEY[ VALUE] with _ for \- (memory, tier,
memory_only, write_through, allow_other, metrics_addr, log_level, config, ...);
log_file=PATH is where the daemon logs (default /var/log/ucmfs/MOUNTPOINT.log).
Generic options (rw, nosuid, nodev, noatime, _netdev, nofail, x\-*) are accepted.
The helper returns once the mount is ready. ucmfs umount MOUNTPOINT flushes and unmounts.
.SH FILES
.TP
.I ~/.cache/ucmfs/nvme
the default disk tier ($XDG_CACHE_HOME/ucmfs/nvme; /var/lib/ucmfs/nvme as root with no $HOME,
as mount(8) runs the helper)
.TP
.I /etc/ucmfs.yaml
a configuration file, given with \-\-config or as the mount SOURCE
.SH SEE ALSO
mount(8), fstab(5), systemd.mount(5); docs/operations.md in the source.
`)
	_, err := io.WriteString(w, b.String())
	return err
}
