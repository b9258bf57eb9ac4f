package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/urfave/cli/v3"
)

func init() { register(hashCommand) }

// hashConfig is what `ucmfs hash` computes: the block ids of Tokens under
// Meta, BlockSize tokens per block.
type hashConfig struct {
	Meta      string
	BlockSize int
	Tokens    []uint32
}

// hashCommand is `ucmfs hash`: block ids and paths from token ids (docs/spec.md §3).
func hashCommand() *cli.Command {
	return &cli.Command{
		Name:      "hash",
		Usage:     "print the block ids and paths of a token sequence",
		ArgsUsage: "TOKEN...",
		Description: "Computes the hash chain of docs/spec.md §3: parent_0 = MD5(\"UCMHASHSEED\" || meta),\n" +
			"id_i = MD5(parent_i || block i as little-endian uint32s). Prints one line per full\n" +
			"block: <index> <id> <hh>/<id>.bin. The meta string is --meta, or is built as\n" +
			"<model>:<world-size>:<dtype>:<rank> from the engine's own model and dtype strings.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "meta", Usage: "meta string `MODEL:WS:DTYPE:RANK` (instead of --model ...)"},
			&cli.StringFlag{Name: "model", Usage: "engine model name, e.g. meta-llama/Llama-3.1-8B"},
			&cli.IntFlag{Name: "world-size", Value: 1, Usage: "tensor-parallel world size"},
			&cli.StringFlag{Name: "dtype", Usage: "engine dtype string, e.g. bfloat16"},
			&cli.IntFlag{Name: "rank", Value: 0, Usage: "rank of this worker"},
			&cli.IntFlag{Name: "block-size", Required: true, Usage: "tokens per block (>= 1)"},
			&cli.StringFlag{Name: "tokens-file", TakesFile: true,
				Usage: "read whitespace-separated token ids from `FILE` (- for stdin) instead of arguments"},
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			cfg, err := hashConfigFrom(cmd)
			if err != nil {
				return err
			}
			return runHash(cfg, cmd.Root().Writer)
		},
	}
}

// hashConfigFrom turns the command line into a hashConfig, or a usage
// error (exit 2).
func hashConfigFrom(cmd *cli.Command) (hashConfig, error) {
	var cfg hashConfig
	cfg.BlockSize = cmd.Int("block-size")
	if cfg.BlockSize < 1 {
		return cfg, usageErrorf("hash: --block-size must be >= 1, got %d", cfg.BlockSize)
	}
	parts := cmd.IsSet("model") || cmd.IsSet("dtype") || cmd.IsSet("world-size") || cmd.IsSet("rank")
	switch {
	case cmd.IsSet("meta") && parts:
		return cfg, usageErrorf("hash: give either --meta or --model/--dtype/--world-size/--rank, not both")
	case cmd.IsSet("meta"):
		cfg.Meta = cmd.String("meta")
	case cmd.String("model") == "" || cmd.String("dtype") == "":
		return cfg, usageErrorf("hash: give --meta, or --model and --dtype (with --world-size, --rank)")
	default:
		ws, rank := cmd.Int("world-size"), cmd.Int("rank")
		if ws < 1 || rank < 0 || rank >= ws {
			return cfg, usageErrorf("hash: need --world-size >= 1 and 0 <= --rank < world size, got %d and %d", ws, rank)
		}
		cfg.Meta = hashdir.Meta(cmd.String("model"), ws, cmd.String("dtype"), rank)
	}

	var err error
	switch file := cmd.String("tokens-file"); {
	case file != "" && cmd.Args().Present():
		return cfg, usageErrorf("hash: give token ids as arguments or with --tokens-file, not both")
	case file == "-":
		cfg.Tokens, err = readTokens(cmd.Root().Reader)
	case file != "":
		cfg.Tokens, err = readTokensFile(file)
	default:
		cfg.Tokens, err = parseTokens(cmd.Args().Slice())
	}
	if err != nil {
		return cfg, err
	}
	if len(cfg.Tokens) == 0 {
		return cfg, usageErrorf("hash: no token ids given")
	}
	return cfg, nil
}

// runHash prints one line per full block: <index> <id> <hh>/<id>.bin.
func runHash(cfg hashConfig, w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i, id := range hashdir.Chain(cfg.Meta, cfg.BlockSize, cfg.Tokens) {
		fmt.Fprintf(bw, "%d %s %s/%s.bin\n", i, id, id.Shard(), id)
	}
	return bw.Flush()
}

// parseToken parses one decimal token id in 0..2^32-1.
func parseToken(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, usageErrorf("hash: token id %q is not a decimal integer in 0..4294967295", s)
	}
	return uint32(v), nil
}

func parseTokens(args []string) ([]uint32, error) {
	tokens := make([]uint32, 0, len(args))
	for _, a := range args {
		t, err := parseToken(a)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, t)
	}
	return tokens, nil
}

func readTokensFile(path string) ([]uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageErrorf("hash: %v", err)
	}
	defer f.Close()
	return readTokens(f)
}

// readTokens reads whitespace-separated decimal token ids.
func readTokens(r io.Reader) ([]uint32, error) {
	sc := bufio.NewScanner(r)
	sc.Split(bufio.ScanWords)
	var tokens []uint32
	for sc.Scan() {
		t, err := parseToken(sc.Text())
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, t)
	}
	if err := sc.Err(); err != nil {
		return nil, usageErrorf("hash: reading token ids: %v", err)
	}
	return tokens, nil
}
