package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/format"
)

// checkMeta checks a meta string as a mount must match it: MODEL:WORLD:
// DTYPE:RANK (split at the last three colons: a model path may hold
// colons) with a model, WORLD >= 1, 0 <= RANK < WORLD, and DTYPE one a
// block header takes (torch.-prefixed for --scheme ucm, as
// str(torch.dtype) writes it). A typo there gives ids no engine ever
// writes, so it is refused with the field named.
func checkMeta(meta, scheme string) error {
	parts := strings.Split(meta, ":")
	n := len(parts)
	if n < 4 {
		return fmt.Errorf("meta %q is not MODEL:WORLD:DTYPE:RANK", meta)
	}
	model, ws, dtype, rank := strings.Join(parts[:n-3], ":"), parts[n-3], parts[n-2], parts[n-1]
	if model == "" {
		return fmt.Errorf("meta %q: MODEL is empty", meta)
	}
	w, err := strconv.Atoi(ws)
	if err != nil || w < 1 {
		return fmt.Errorf("meta %q: WORLD %q: want a world size >= 1", meta, ws)
	}
	if r, err := strconv.Atoi(rank); err != nil || r < 0 || r >= w {
		return fmt.Errorf("meta %q: RANK %q: want 0 to %d (WORLD - 1)", meta, rank, w-1)
	}
	name := dtype
	if scheme == schemeUCM {
		var ok bool
		if name, ok = strings.CutPrefix(dtype, "torch."); !ok {
			return fmt.Errorf("meta %q: DTYPE %q: --scheme ucm wants torch.DTYPE, as str(torch.dtype) writes it", meta, dtype)
		}
	}
	if _, err := format.ParseDtype(name); err != nil {
		var names []string
		for d := format.Dtype(0); d.Valid(); d++ {
			names = append(names, d.String())
		}
		return fmt.Errorf("meta %q: DTYPE %q: want one of %s", meta, dtype, strings.Join(names, ", "))
	}
	return nil
}
