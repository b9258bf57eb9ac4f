package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/urfave/cli/v3"
)

func init() { register(hashCommand) }

// hashConfig is what `ucmfs hash` computes: the block ids of Tokens under
// Meta, BlockSize tokens per block, in the chain of Scheme.
type hashConfig struct {
	Scheme    string // schemeUCMFS or schemeUCM
	Meta      string
	UCM       format.UCMMeta // Meta parsed, for schemeUCM
	MLA       bool           // schemeUCM: ranks share rank 0's ids
	BlockSize int
	Tokens    []uint32
	Keys      format.Keys // extra keys (schemeUCMFS), the group aside
	Groups    []hashGroup // one id list per KV-cache group; none: one ungrouped list
	StateAt   int         // > 0: print only the block that ends at this token
}

// The chains `ucmfs hash --scheme` computes.
const (
	schemeUCMFS = "ucmfs" // docs/format.md §2
	schemeUCM   = "ucm"   // UCM's vLLM connector, docs/format.md §2.2
)

// hashCommand is `ucmfs hash`: block ids and paths from token ids (docs/spec.md §3).
func hashCommand() *cli.Command {
	return &cli.Command{
		Name:      "hash",
		Usage:     "print the block ids and paths of a token sequence",
		ArgsUsage: "TOKEN...",
		Description: "Computes the hash chain of docs/spec.md §3: parent_0 = MD5(\"UCMHASHSEED\" || meta),\n" +
			"id_i = MD5(parent_i || block i as little-endian uint32s). Prints one line per full\n" +
			"block: <index> <id> <hh>/<id>.bin. The meta string is --meta, or is built as\n" +
			"<model>:<world-size>:<dtype>:<rank> from the engine's own model and dtype strings.\n" +
			"--salt, --lora, --mm, --embeds and --group add extra keys (docs/format.md §2.1);\n" +
			"with --group the lines are <gid> <index> <id> <hh>/<id>.bin, one list per group.\n" +
			"--scheme ucm computes UCM's ids instead (docs/format.md §2.2).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "meta", Usage: "meta string `MODEL:WS:DTYPE:RANK` (instead of --model ...)"},
			&cli.StringFlag{Name: "model", Usage: "engine model name, e.g. meta-llama/Llama-3.1-8B"},
			&cli.IntFlag{Name: "world-size", Value: 1, Usage: "tensor-parallel world size"},
			&cli.StringFlag{Name: "dtype", Usage: "engine dtype string, e.g. bfloat16"},
			&cli.IntFlag{Name: "rank", Value: 0, Usage: "rank of this worker"},
			&cli.IntFlag{Name: "block-size", Required: true, Usage: "tokens per block (>= 1)"},
			&cli.StringFlag{Name: "tokens-file", TakesFile: true,
				Usage: "read whitespace-separated token ids from `FILE` (- for stdin) instead of arguments"},
			&cli.StringFlag{Name: "scheme", Value: schemeUCMFS, Usage: "chain: ucmfs, or ucm for UCM's connector's ids"},
			&cli.BoolFlag{Name: "mla", Usage: "scheme ucm: an MLA model, whose ranks share rank 0's ids"},
			&cli.StringFlag{Name: "salt", Usage: "cache salt of the prompt's tenant (first block)"},
			&cli.StringFlag{Name: "lora", Usage: "LoRA adapter `NAME` (every block)"},
			&cli.StringSliceFlag{Name: "mm", Usage: "multimodal input `HASH@OFFSET` (repeatable)"},
			&cli.StringSliceFlag{Name: "embeds", Usage: "prompt-embeddings `HASH` of the next block (repeatable: block 0, 1, ...)"},
			&cli.StringSliceFlag{Name: "group", Usage: "KV-cache group `GID[:BLOCK]`, one id list each (repeatable)"},
			&cli.IntFlag{Name: "state-at", Usage: "print only the id of the state at token `POS` (the block ending there)"},
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
	if err := hashMetaFrom(cmd, &cfg); err != nil {
		return cfg, err
	}
	if err := hashKeysFrom(cmd, &cfg); err != nil {
		return cfg, err
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
	return cfg, cfg.checkStateAt()
}

// hashMetaFrom sets cfg's scheme and meta from --scheme, --mla and --meta
// or its parts.
func hashMetaFrom(cmd *cli.Command, cfg *hashConfig) error {
	cfg.Scheme, cfg.MLA = cmd.String("scheme"), cmd.Bool("mla")
	if cfg.Scheme != schemeUCMFS && cfg.Scheme != schemeUCM {
		return usageErrorf("hash: --scheme is ucmfs or ucm, not %q", cfg.Scheme)
	}
	if cfg.MLA && cfg.Scheme != schemeUCM {
		return usageErrorf("hash: --mla needs --scheme ucm")
	}
	parts := cmd.IsSet("model") || cmd.IsSet("dtype") || cmd.IsSet("world-size") || cmd.IsSet("rank")
	switch {
	case cmd.IsSet("meta") && parts:
		return usageErrorf("hash: give either --meta or --model/--dtype/--world-size/--rank, not both")
	case cmd.IsSet("meta"):
		cfg.Meta = cmd.String("meta")
	case cmd.String("model") == "" || cmd.String("dtype") == "":
		return usageErrorf("hash: give --meta, or --model and --dtype (with --world-size, --rank)")
	default:
		ws, rank := cmd.Int("world-size"), cmd.Int("rank")
		if ws < 1 || rank < 0 || rank >= ws {
			return usageErrorf("hash: need --world-size >= 1 and 0 <= --rank < world size, got %d and %d", ws, rank)
		}
		dtype := cmd.String("dtype")
		if cfg.Scheme == schemeUCM && !strings.HasPrefix(dtype, "torch.") {
			dtype = "torch." + dtype // UCM's meta holds str(torch.dtype)
		}
		cfg.Meta = format.Meta(cmd.String("model"), ws, dtype, rank)
	}
	if err := checkMeta(cfg.Meta, cfg.Scheme); err != nil {
		return usageErrorf("hash: %v", err)
	}
	if cfg.Scheme == schemeUCM {
		m, err := format.ParseMeta(cfg.Meta)
		if err != nil {
			return usageErrorf("hash: --scheme ucm: %v", err)
		}
		cfg.UCM = m
	}
	return nil
}

// runHash prints one line per full block: <index> <id> <hh>/<id>.bin,
// prefixed by <gid> with groups; with StateAt, only the block ending there.
func runHash(cfg hashConfig, w io.Writer) error {
	bw := bufio.NewWriter(w)
	groups := cfg.Groups
	if len(groups) == 0 {
		groups = []hashGroup{{ID: -1, BlockSize: cfg.BlockSize}}
	}
	for _, g := range groups {
		prefix := ""
		if g.ID >= 0 {
			prefix = strconv.Itoa(g.ID) + " "
		}
		for i, id := range cfg.ids(g) {
			if cfg.StateAt > 0 && (i+1)*g.BlockSize != cfg.StateAt {
				continue
			}
			fmt.Fprintf(bw, "%s%d %s %s/%s.bin\n", prefix, i, id, id.Shard(), id)
		}
	}
	return bw.Flush()
}

// ids is the id list of group g (ID -1: the ungrouped chain).
func (cfg hashConfig) ids(g hashGroup) []format.ID {
	if cfg.Scheme == schemeUCM {
		return format.UCMChain(cfg.UCM, cfg.MLA, g.BlockSize, cfg.Tokens)
	}
	keys := cfg.Keys
	keys.Group, keys.HasGroup = g.ID, g.ID >= 0
	return format.ChainKeys(cfg.Meta, g.BlockSize, cfg.Tokens, keys)
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
