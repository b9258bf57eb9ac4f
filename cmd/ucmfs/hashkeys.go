package main

import (
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/urfave/cli/v3"
)

// hashGroup is one KV-cache group of `ucmfs hash --group GID[:BLOCK]`: its
// id and its block size (--block-size when not given).
type hashGroup struct {
	ID        int
	BlockSize int
}

// hashKeysFrom sets cfg's extra keys, groups and state position from
// --salt, --lora, --mm, --embeds, --group and --state-at.
func hashKeysFrom(cmd *cli.Command, cfg *hashConfig) error {
	cfg.Keys = format.Keys{Salt: cmd.String("salt"), LoRA: cmd.String("lora"), Embeds: cmd.StringSlice("embeds")}
	for _, s := range cmd.StringSlice("mm") {
		m, err := format.ParseMMKey(s)
		if err != nil {
			return usageErrorf("hash: --mm: %v", err)
		}
		cfg.Keys.MM = append(cfg.Keys.MM, m)
	}
	if cfg.Scheme == schemeUCM && (!cfg.Keys.Empty() || cmd.IsSet("group")) {
		return usageErrorf("hash: UCM's ids take no --salt, --lora, --mm, --embeds or --group")
	}
	seen := map[int]bool{}
	for _, s := range cmd.StringSlice("group") {
		g, err := parseGroup(s, cfg.BlockSize)
		if err != nil {
			return err
		}
		if seen[g.ID] {
			return usageErrorf("hash: --group %d given twice", g.ID)
		}
		seen[g.ID] = true
		cfg.Groups = append(cfg.Groups, g)
	}
	cfg.StateAt = cmd.Int("state-at")
	if cmd.IsSet("state-at") && cfg.StateAt < 1 {
		return usageErrorf("hash: --state-at must be >= 1, got %d", cfg.StateAt)
	}
	return nil
}

// parseGroup parses "GID" or "GID:BLOCK" (GID >= 0, BLOCK >= 1).
func parseGroup(s string, blockSize int) (hashGroup, error) {
	gid, bs, hasBS := strings.Cut(s, ":")
	g := hashGroup{BlockSize: blockSize}
	var err error
	if g.ID, err = strconv.Atoi(gid); err != nil || g.ID < 0 {
		return g, usageErrorf("hash: --group %q: the group id is not an integer >= 0", s)
	}
	if hasBS {
		if g.BlockSize, err = strconv.Atoi(bs); err != nil || g.BlockSize < 1 {
			return g, usageErrorf("hash: --group %q: the block size is not an integer >= 1", s)
		}
	}
	return g, nil
}

// checkStateAt checks that --state-at ends a block of every group, within
// the tokens given.
func (cfg hashConfig) checkStateAt() error {
	if cfg.StateAt == 0 {
		return nil
	}
	if cfg.StateAt > len(cfg.Tokens) {
		return usageErrorf("hash: --state-at %d is past the %d tokens given", cfg.StateAt, len(cfg.Tokens))
	}
	sizes := []int{cfg.BlockSize}
	if len(cfg.Groups) > 0 {
		sizes = sizes[:0]
		for _, g := range cfg.Groups {
			sizes = append(sizes, g.BlockSize)
		}
	}
	for _, b := range sizes {
		if cfg.StateAt%b != 0 {
			return usageErrorf("hash: --state-at %d does not end a block of %d tokens", cfg.StateAt, b)
		}
	}
	return nil
}
