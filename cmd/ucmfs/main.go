// Command ucmfs is the ucmfs daemon and its tools: it mounts the KV-cache
// block filesystem and computes, inspects and checks block files. See
// docs/spec.md §9 and docs/operations.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGHUP (the terminal of a foreground daemon was closed) stops the
	// daemon as SIGTERM does: flush, unmount, exit. SIGPIPE is received,
	// not fatal: once nobody reads stderr (`make run | tee log` after
	// Ctrl-C, a closed terminal), a log line fails with EPIPE and is
	// dropped, and the shutdown goes on. Received rather than ignored, so
	// the programs the daemon runs start with the default action.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := Main(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
