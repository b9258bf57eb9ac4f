package transfer

import (
	"bytes"
	"fmt"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/gpu"
)

// loadTarget is where a load copies to: one region (r), or one K and one
// V region per layer (k, v; see load.go).
type loadTarget struct {
	r    gpu.Region
	k, v []gpu.Region
	what string // for messages: "region 3", "K regions 1,3/V regions 2,4"
}

// target reads a load's target: "<r>" or "<k0>,<k1>,.../<v0>,<v1>,...",
// as many K regions as V regions, each registered in this session.
func (g *Session) target(t *line.Tokens) (*loadTarget, error) {
	tok := t.Next()
	if tok == nil {
		return nil, line.Err(line.ErrInvalid, "missing region number")
	}
	kTok, vTok, kv := line.Cut(tok, '/')
	if !kv {
		_, r, err := g.lookup(tok)
		if err != nil {
			return nil, err
		}
		return &loadTarget{r: r.r, what: r.what}, nil
	}
	tg := &loadTarget{what: "K/V regions " + line.Clip(tok)}
	var err error
	if tg.k, err = g.regionList(kTok, "K"); err != nil {
		return nil, err
	}
	if tg.v, err = g.regionList(vTok, "V"); err != nil {
		return nil, err
	}
	if len(tg.k) != len(tg.v) {
		return nil, line.Err(line.ErrInvalid, "%d K regions and %d V regions: want one of each per layer", len(tg.k), len(tg.v))
	}
	return tg, nil
}

// regionList reads comma-separated region numbers.
func (g *Session) regionList(tok []byte, what string) ([]gpu.Region, error) {
	if len(tok) == 0 {
		return nil, line.Err(line.ErrInvalid, "no %s regions: want <k0>,<k1>,.../<v0>,<v1>,...", what)
	}
	if bytes.HasSuffix(tok, []byte{','}) {
		return nil, line.Err(line.ErrInvalid, "a %s region list ends in a comma", what)
	}
	var rs []gpu.Region
	for len(tok) > 0 {
		if len(rs) == MaxRegions {
			return nil, line.Err(line.ErrTooMany, "more than %d %s regions", MaxRegions, what)
		}
		num, rest, _ := line.Cut(tok, ',')
		_, r, err := g.lookup(num)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r.r)
		tok = rest
	}
	return rs, nil
}

// fits checks that a resolved item lies inside the target's regions.
func (tg *loadTarget) fits(it *loadItem) error {
	if tg.r != nil {
		if size := tg.r.Size(); it.dst > size || it.n > size-it.dst {
			return fmt.Errorf("%d bytes at offset %d pass the end of region (%d bytes)", it.n, it.dst, size)
		}
		return nil
	}
	half := it.per / 2
	for l := it.first; l <= it.last; l++ {
		for _, r := range []gpu.Region{tg.k[l], tg.v[l]} {
			if size := r.Size(); it.dst > size || half > size-it.dst {
				return fmt.Errorf("layer %d: %d bytes at offset %d pass the end of a K or V region (%d bytes)", l, half, it.dst, size)
			}
		}
	}
	return nil
}

// ops appends the copies of an item whose bytes are src.
func (tg *loadTarget) ops(ops []gpu.RegionOp, it *loadItem, src []byte) []gpu.RegionOp {
	if tg.r != nil {
		return append(ops, gpu.RegionOp{Region: tg.r, Off: it.dst, Host: src})
	}
	half := it.per / 2
	for l := it.first; l <= it.last; l++ {
		layer := src[int64(l-it.first)*it.per:][:it.per]
		ops = append(ops,
			gpu.RegionOp{Region: tg.k[l], Off: it.dst, Host: layer[:half]},
			gpu.RegionOp{Region: tg.v[l], Off: it.dst, Host: layer[half:]})
	}
	return ops
}
