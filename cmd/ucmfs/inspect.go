package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
	"github.com/ucmfs/ucmfs/tiers"
	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"
)

func init() { register(inspectCommand) }

// inspectCommand is `ucmfs inspect FILE...`: decode and verify block and
// sidecar files.
func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "decode and verify block (.bin) and sidecar (.repr) files, and the raw files of other layouts",
		ArgsUsage: "FILE...",
		Description: "Prints the header of each file and OK or the rule it breaks. The id comes from the\n" +
			"file name, the file type from the extension (else the magic). The payload CRC-32C is\n" +
			"checked when the header flags it and against the user.ucm.crc32c xattr when present.\n" +
			"A file of a files model or a raw block of a ucm-posix model (its model directory, on a\n" +
			"mount or in a tier directory, says so) has no header: its bytes are checked against the\n" +
			"CRC-32C the mount or the tier keeps (the xattr, else the tier's sum file).\n" +
			"Exits 1 if any file is invalid.",
		Action: func(_ context.Context, cmd *cli.Command) error {
			if !cmd.Args().Present() {
				return usageErrorf("inspect: no FILE given")
			}
			w := cmd.Root().Writer
			bad := 0
			for i, path := range cmd.Args().Slice() {
				if i > 0 {
					fmt.Fprintln(w)
				}
				r, err := inspectPath(path)
				printReport(w, r, err)
				if err != nil {
					bad++
				}
			}
			if bad > 0 {
				return failed()
			}
			return nil
		},
	}
}

// inspectPath inspects the file at path as what it is where it is: a raw
// file when the model directory it is in says so (on a mount, its
// user.ucm.layout; in a tier directory, tiers.LocateTierFile), else a
// block or sidecar with a UCMB header.
func inspectPath(path string) (format.FileReport, error) {
	name := mountLayout(path)
	switch l, ok := registry.ByName(name); {
	case name == "":
	case ok && !l.Headerless():
		return format.InspectFile(path)
	default:
		return format.InspectRawFile(path)
	}
	t, ok := tiers.LocateTierFile(path)
	if !ok || !t.Raw {
		return format.InspectFile(path)
	}
	r, err := format.InspectRawFile(path)
	if err == nil && !r.HasXattrCRC {
		r.CRCDone, err = t.CheckKeptSum()
	}
	return r, err
}

// mountLayout is the layout of the model of a mount that path is in: the
// user.ucm.layout of the nearest parent that has one ("" when none does:
// path is not on a mount).
func mountLayout(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	buf := make([]byte, 64)
	for dir, i := filepath.Dir(abs), 0; i < 256; dir, i = filepath.Dir(dir), i+1 {
		if n, err := unix.Getxattr(dir, "user.ucm.layout", buf); err == nil {
			return string(buf[:n])
		}
		if dir == "/" {
			break
		}
	}
	return ""
}

// printReport writes the human summary of one inspected file.
func printReport(w io.Writer, r format.FileReport, err error) {
	line := func(k, format string, args ...any) { fmt.Fprintf(w, "  %-14s %s\n", k, fmt.Sprintf(format, args...)) }
	fmt.Fprintf(w, "%s\n", r.Path)
	if r.Size > 0 || r.Decoded || r.Raw {
		line("size", "%d bytes", r.Size)
	}
	if r.Raw {
		printRaw(line, r)
	}
	if r.Decoded {
		if r.Kind == format.Repr {
			printRepr(line, r.Repr)
		} else {
			printBlock(line, r.Block, r.Size)
		}
		if r.CRCDone {
			line("payload crc", "%s (computed)", format.FormatCRC(r.CRC))
		}
		if r.HasXattrCRC {
			line("xattr crc", "%s (%s)", format.FormatCRC(r.XattrCRC), format.CRCXattr)
		}
	}
	if err != nil {
		kind := "INVALID"
		if !errors.Is(err, format.ErrFormat) && !errors.Is(err, format.ErrName) {
			kind = "ERROR"
		}
		line("result", "%s: %v", kind, err)
		return
	}
	line("result", "OK")
}

// printRaw prints what was checked of a raw file.
func printRaw(line func(k, format string, args ...any), r format.FileReport) {
	line("type", "raw (no header: a file of a files model or a raw block of a ucm-posix model)")
	switch {
	case r.HasXattrCRC:
		if r.CRCDone {
			line("crc", "%s (computed)", format.FormatCRC(r.CRC))
		}
		line("xattr crc", "%s (%s)", format.FormatCRC(r.XattrCRC), format.CRCXattr)
	case r.CRCDone:
		line("crc", "checked against the tier's sum file")
	default:
		line("crc", "none kept: the size is the only rule")
	}
}

func printBlock(line func(k, format string, args ...any), h format.BlockHeader, size int64) {
	line("type", "block (%s v%d)", format.BlockMagic, format.FormatVersion)
	line("id", "%s (shard %s)", h.ID, h.ID.Shard())
	line("num_layers", "%d", h.NumLayers)
	line("block_size", "%d tokens", h.BlockSize)
	line("dtype", "%s (%d bytes)", h.Dtype, h.Dtype.Size())
	if h.Opaque() {
		line("layout", "opaque (no K/V layout: checked for size and CRC only, no sidecar)")
	} else {
		printLayout(line, h)
	}
	if h.PayloadLen != 0 {
		line("payload_len", "%d", h.PayloadLen)
	} else {
		line("payload_len", "not stated (file has %d)", max(size-format.HeaderSize, 0))
	}
	if h.HasCRC() {
		line("header crc", "%s", format.FormatCRC(h.PayloadCRC))
	} else {
		line("header crc", "not set")
	}
}

// printLayout prints the K/V layout of a block that is not opaque.
func printLayout(line func(k, format string, args ...any), h format.BlockHeader) {
	line("num_kv_heads", "%s", stated(h.NumKVHeads))
	line("head_dim", "%s", stated(h.HeadDim))
	switch t := h.Tensors(); {
	case h.TensorsPerLayer == 0:
		line("tensors", "2 per layer (K, V; field 0)")
	case t == 2:
		line("tensors", "2 per layer (K, V)")
	case t == 1:
		line("tensors", "1 per layer (MLA latent)")
	default:
		line("tensors", "%d per layer", t)
	}
	if s := h.TensorBytes(); s > 0 {
		line("tensor bytes", "%d (layer stride %d)", s, s*int64(h.Tensors()))
	}
}

func printRepr(line func(k, format string, args ...any), h format.ReprHeader) {
	line("type", "sidecar (%s v%d)", format.ReprMagic, format.FormatVersion)
	line("id", "%s (shard %s)", h.ID, h.ID.Shard())
	line("kind", "%d %s", uint32(h.Kind), h.Kind)
	line("dtype", "%s (%d bytes)", h.Dtype, h.Dtype.Size())
	line("num_layers", "%d", h.NumLayers)
	line("num_kv_heads", "%d", h.NumKVHeads)
	line("rows", "%d", h.Rows)
	line("dim", "%d", h.Dim)
	switch h.Kind {
	case format.ReprMerged:
		line("param", "%d (merge factor)", h.Param)
	case format.ReprSignHash:
		line("param", "%d (hash bits)", h.Param)
	default:
		line("param", "%d", h.Param)
	}
	if h.HasCRC() {
		line("header crc", "%s", format.FormatCRC(h.PayloadCRC))
	} else {
		line("header crc", "not set")
	}
}

func stated(v uint32) string {
	if v == 0 {
		return "not stated"
	}
	return fmt.Sprint(v)
}
