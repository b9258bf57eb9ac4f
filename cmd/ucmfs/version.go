package main

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/urfave/cli/v3"
)

// version is the release of this build, set by the linker:
// go build -ldflags "-X main.version=v1.2.3" ./cmd/ucmfs
// When empty, the module version of the build info is used, else "dev".
var version = ""

func init() {
	register(versionCommand)
	// --version prints what `ucmfs version` prints.
	cli.VersionPrinter = func(cmd *cli.Command) { fmt.Fprintf(cmd.Root().Writer, "ucmfs %s\n", versionString()) }
}

// versionCommand is `ucmfs version`.
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version of ucmfs",
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Present() {
				return usageErrorf("version takes no arguments")
			}
			_, err := fmt.Fprintf(cmd.Root().Writer, "ucmfs %s\n", versionString())
			return err
		},
	}
}

// versionString is the version to show: the linker's, the build info's
// module version, or "dev".
func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
