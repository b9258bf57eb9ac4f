package gpu

import (
	"fmt"
	"slices"
)

// RegionOp is one copy of CopyInRegions: Host bytes and the offset in
// Region they go to.
type RegionOp struct {
	Region Region
	Off    int64
	Host   []byte
}

// CopyInRegions copies every op's Host bytes into its region: a scatter
// over several regions, such as a block whose K and V halves go to an
// engine's separate K and V tensors, layer by layer. All bounds are
// checked first (ErrBounds, nothing copied). Ops on CUDA regions of one
// GPU are submitted together and waited for once; other regions take
// their ops as one batch each.
func CopyInRegions(ops []RegionOp) error {
	for i, op := range ops {
		if op.Region == nil {
			return fmt.Errorf("gpu: op %d has no region: %w", i, ErrBounds)
		}
		if err := checkRange(op.Region.Size(), op.Off, len(op.Host)); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	// Group in first-seen order: by GPU context for CUDA, by region else.
	type group struct {
		key any
		ops []RegionOp
	}
	var groups []*group
	for _, op := range ops {
		var key any = op.Region
		if r, ok := op.Region.(*cudaRegion); ok {
			key = r.c
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.key == key })
		if i < 0 {
			groups = append(groups, &group{key: key})
			i = len(groups) - 1
		}
		groups[i].ops = append(groups[i].ops, op)
	}
	for _, g := range groups {
		if c, ok := g.key.(*devCtx); ok {
			if err := c.copy(g.ops, true); err != nil {
				return err
			}
			continue
		}
		batch := make([]CopyOp, len(g.ops))
		for i, op := range g.ops {
			batch[i] = CopyOp{Off: op.Off, Host: op.Host}
		}
		r := g.ops[0].Region
		if err := r.CopyInBatch(batch); err != nil {
			return err
		}
	}
	return nil
}

// sortInts sorts a small slice in place.
func sortInts(s []int) { slices.Sort(s) }
