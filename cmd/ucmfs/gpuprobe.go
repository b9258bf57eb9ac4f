package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ucmfs/ucmfs/gpu"
	"github.com/urfave/cli/v3"
)

func init() { register(gpuCommand) }

// gpuCommand is `ucmfs gpu`, whose one subcommand is probe.
func gpuCommand() *cli.Command {
	return &cli.Command{
		Name:  "gpu",
		Usage: "inspect the GPUs the CUDA driver offers to MNT/.ucm/gpu",
		Commands: []*cli.Command{{
			Name:  "probe",
			Usage: "print the CUDA driver version, every GPU (ordinal, UUID, PCI bus id) and the attributes ucmfs depends on",
			Description: "Loads the CUDA driver (libcuda.so.1, or --library) the way 'ucmfs mount --gpu cuda'\n" +
				"does, without creating a context on any GPU. Ordinals follow this process's\n" +
				"CUDA_VISIBLE_DEVICES; engines should name their GPU by UUID. Exits 1, saying why,\n" +
				"when there is no usable driver or GPU: that is when --gpu auto falls back to sim.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "library", Value: gpu.DefaultLibrary, Usage: "the CUDA driver `LIBRARY` to load"},
				&cli.BoolFlag{Name: "json", Usage: "print the probe as JSON"},
			},
			Action: func(_ context.Context, cmd *cli.Command) error {
				if cmd.Args().Present() {
					return usageErrorf("gpu probe takes no arguments")
				}
				p, err := gpu.Probe(cmd.String("library"))
				if err != nil {
					return fmt.Errorf("gpu probe: %w (--gpu auto would fall back to the simulated device)", err)
				}
				w := cmd.Root().Writer
				if cmd.Bool("json") {
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					return enc.Encode(p)
				}
				return printProbe(w, p)
			},
		}},
	}
}

// printProbe writes the human view of a probe.
func printProbe(w io.Writer, p gpu.ProbeResult) error {
	fmt.Fprintf(w, "driver %s: CUDA %s (%d), %d GPUs\n", p.Library, p.DriverString(), p.DriverVersion, len(p.Devices))
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	for _, d := range p.Devices {
		fmt.Fprintf(w, "\ncuda:%d  %s\n", d.Ordinal, d.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, row := range [][2]string{
			{"uuid", d.UUID},
			{"pci bus id", d.PCIBusID},
			{"memory", fmt.Sprintf("%.1f GiB", float64(d.TotalMem)/(1<<30))},
			{"unified addressing", yes(d.UnifiedAddressing)},
			{"host register", yes(d.HostRegister)},
			{"read-only host register", yes(d.ReadOnlyHostRegister) + readOnlyNote(d.ReadOnlyHostRegister)},
			{"host pointer for registered memory", yes(d.HostPointerForReg)},
			{"virtual memory management", yes(d.VMM)},
			{"VMM POSIX fd handles", yes(d.VMMPosixFD) + vmmNote(d.VMM && d.VMMPosixFD)},
			{"copy engines", fmt.Sprint(d.AsyncEngines)},
		} {
			fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func readOnlyNote(ok bool) string {
	if ok {
		return " (memory-tier pages registered CU_MEMHOSTREGISTER_READ_ONLY)"
	}
	return " (memory-tier pages registered without CU_MEMHOSTREGISTER_READ_ONLY)"
}

func vmmNote(ok bool) string {
	if ok {
		return " (engines may register VMM memory by fd)"
	}
	return " (VMM memory cannot be registered: IPC handles only)"
}
