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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
