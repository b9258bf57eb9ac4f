// Command benchplot turns the output of the mount benchmarks (package
// bench) into the table and the picture of docs/performance.md. It reads
// `go test -bench` output (the median of -count runs per benchmark) and
// the scale run's JSON, prints the table with every ratio against the
// tmpfs baseline of the same run and the acceptance targets, and
// draws a PNG with the standard library alone (a built-in 5x7 font).
//
//	benchplot -bench mount.txt -scale scale.json -png docs/performance-mount.png [-md mount.md]
//	benchplot -anchor before=before.txt,after=after.txt
//
// The second form prints, per workload, every ucmfs figure as a ratio to
// libfuse's passthrough_hp of the same round (anchor.go).
// make bench runs it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("benchplot", flag.ContinueOnError)
	benchPath := fl.String("bench", "", "`FILE` of `go test -bench` output of package bench (- for stdin)")
	scalePath := fl.String("scale", "", "`FILE` of the scale run's JSON (UCMFS_SCALE_OUT); missing: no scale run")
	pngPath := fl.String("png", "", "write the picture to `FILE`")
	mdPath := fl.String("md", "", "also write the tables as Markdown to `FILE`")
	anchor := fl.String("anchor", "", "print the anchor tables (ucmfs over passthrough_hp) of the runs `label=FILE,...` instead")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *anchor != "" {
		return runAnchor(*anchor, stdout)
	}
	if *benchPath == "" {
		return fmt.Errorf("-bench FILE is required")
	}
	in := io.Reader(os.Stdin)
	if *benchPath != "-" {
		f, err := os.Open(*benchPath)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	r, err := parseBench(in)
	if err != nil {
		return err
	}
	if len(r) == 0 {
		// The mount benchmarks skip where FUSE cannot be used.
		fmt.Fprintf(stdout, "%s: no BenchmarkMount results (no FUSE here?): no table, the picture is left as it is\n", *benchPath)
		return nil
	}
	s, err := readScale(*scalePath)
	if err != nil {
		return err
	}
	writeTables(stdout, r, s, false)
	if *mdPath != "" {
		var b bytes.Buffer
		writeTables(&b, r, s, true)
		if err := os.WriteFile(*mdPath, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if *pngPath != "" {
		var b bytes.Buffer
		if err := writePNG(&b, r, s); err != nil {
			return err
		}
		if err := os.WriteFile(*pngPath, b.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "\nwrote", *pngPath)
	}
	return nil
}
