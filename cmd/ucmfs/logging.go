package main

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
)

// logFormats are the values of --log-format.
var logFormats = []string{"text", "json"}

// logFormatFlag is --log-format.
func logFormatFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-format", Category: catLogging, Value: "text",
		Usage: "`FORMAT` of the log on stderr: text (key=value) or json (one object per line)"}
}

// checkLogFormat accepts text and json.
func checkLogFormat(f string) error {
	if !slices.Contains(logFormats, f) {
		return fmt.Errorf("log format %q: want %s", f, strings.Join(logFormats, " or "))
	}
	return nil
}

// newLogger is the daemon's logger on stderr, in cfg's format and level.
func newLogger(cfg mountConfig, stderr io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(stderr, opts))
	}
	return slog.New(slog.NewTextHandler(stderr, opts))
}

// announce tells the operator a milestone ("mounted on ...", "metrics
// on ..."): a plain "ucmfs: ..." line on stderr with the text log, a log
// record with the JSON log, so that every line of a JSON log parses.
func announce(cfg mountConfig, log *slog.Logger, stderr io.Writer, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if cfg.LogFormat == "json" {
		log.Info(msg)
		return
	}
	fmt.Fprintf(stderr, "ucmfs: %s\n", msg)
}
