package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"
)

// Exit statuses of Main.
const (
	exitOK    = 0 // success
	exitFail  = 1 // the command ran and found a problem (invalid file, bad tier entry, I/O error)
	exitUsage = 2 // bad command line or bad input (flags, arguments, token ids)
	exitBusy  = 3 // refused: a running daemon holds the directory (fsck --repair)
	// exitLeftovers: fsck found no bad entry but leftover temporary files
	// (a crashed writer's; --repair removes them).
	exitLeftovers = 4
)

// constructors holds one constructor per subcommand. Each subcommand lives
// in its own file and adds itself with register from that file's init, so a
// new subcommand is one new file.
var constructors []func() *cli.Command

// register adds a subcommand constructor; called from init functions.
func register(newCommand func() *cli.Command) { constructors = append(constructors, newCommand) }

// Main runs the ucmfs command line args (args[0] is the program name) with
// the given output streams and returns the exit status: 0 success, 1 a
// problem found or an operation failed, 2 bad usage or bad input, 3 a
// directory a running daemon holds (fsck --repair). It never calls
// os.Exit, so tests run it in-process. Run as mount.fuse.ucmfs it is the
// mount helper (helper.go).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && isMountHelper(args[0]) {
		return runMountHelper(ctx, args, stderr)
	}
	root := newRoot(stdout, stderr)
	err := root.Run(ctx, args)
	if err == nil {
		return exitOK
	}
	code := exitFail
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	if errors.Is(err, syscall.EPIPE) {
		return code // the reader went away (ucmfs stats | head): nothing to say
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(stderr, "ucmfs: %s\n", msg)
	}
	return code
}

// newRoot builds the root command from the registered subcommands, sorted
// by name, all writing to stdout and stderr.
func newRoot(stdout, stderr io.Writer) *cli.Command {
	root := &cli.Command{
		Name:  "ucmfs",
		Usage: "a FUSE filesystem of LLM KV-cache blocks, and its tools",
		Description: "Blocks are files <model>/<hh>/<id>.bin (64-byte UCMB header + payload) with optional\n" +
			"<id>.repr sidecars; the same layout is used by the mount and by every tier directory.",
		Reader:         os.Stdin,
		Writer:         stdout,
		ErrWriter:      stderr,
		Version:        versionString(),                               // --version, -v
		ExitErrHandler: func(context.Context, *cli.Command, error) {}, // Main reports errors
		// ucmfs completion bash|zsh|fish prints the shell's script; the
		// script asks the binary itself for the words (urfave/cli's own).
		EnableShellCompletion: true,
		ConfigureShellCompletionCommand: func(c *cli.Command) {
			c.Hidden = false
			c.Usage = "print the shell completion script: source <(ucmfs completion bash), zsh, fish, pwsh (bash needs the bash-completion package)"
			c.Action = func(ctx context.Context, cmd *cli.Command) error {
				if cmd.Args().Present() {
					return usageErrorf("completion: no script for %q; the shells are %s", cmd.Args().First(), strings.Join(completionShells(c), ", "))
				}
				return cli.ShowSubcommandHelp(cmd)
			}
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Present() {
				return usageErrorf("unknown command %q (see 'ucmfs --help')", cmd.Args().First())
			}
			return cli.ShowRootCommandHelp(cmd)
		},
	}
	for _, newCommand := range constructors {
		root.Commands = append(root.Commands, newCommand())
	}
	slices.SortFunc(root.Commands, func(a, b *cli.Command) int { return strings.Compare(a.Name, b.Name) })
	setUsageErrors(root)
	return root
}

// setUsageErrors makes flag and argument errors of cmd and its subcommands
// exit with status 2 and a pointer to the help, instead of printing the
// whole help text.
func setUsageErrors(cmd *cli.Command) {
	cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		if c == c.Root() {
			return usageErrorf("%v (see '%s --help')", err, c.FullName())
		}
		name := strings.TrimPrefix(c.FullName(), c.Root().Name+" ")
		return usageErrorf("%s: %v (see '%s --help')", name, err, c.FullName())
	}
	for _, sub := range cmd.Commands {
		setUsageErrors(sub)
	}
}

// exitError is an error with an exit status (cli.ExitCoder). An exitError
// with a nil err exits silently: the command already printed its report.
type exitError struct {
	code int
	err  error
}

// Error is the message to print; empty for a silent exit.
func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

// Unwrap returns the underlying error.
func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the status Main returns for the error.
func (e *exitError) ExitCode() int { return e.code }

// usageErrorf reports bad usage or bad input: exit status 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// failed is the silent status-1 exit of a command that found problems and
// already listed them.
func failed() error { return &exitError{code: exitFail} }

// completionShells are the shells `ucmfs completion` has a script for:
// its subcommands.
func completionShells(c *cli.Command) []string {
	var out []string
	for _, sc := range c.Commands {
		if sc.Name != "help" {
			out = append(out, sc.Name)
		}
	}
	return out
}
