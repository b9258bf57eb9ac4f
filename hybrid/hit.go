package hybrid

import (
	"errors"
	"fmt"

	"github.com/ucmfs/ucmfs/format"
)

// ErrGroups reports groups HitLength cannot work on.
var ErrGroups = errors.New("invalid hybrid groups")

// Group is one KV-cache group of one prompt: its spec, its block size in
// tokens, the ids of the prompt's full blocks at that size (its chain,
// format.ChainKeys with the group's key), and whether a block is stored.
type Group struct {
	Spec      Spec
	BlockSize int
	IDs       []format.ID
	Exists    func(format.ID) bool
}

// kindType is the groups of one spec and block size, which vLLM looks up
// together: block i is a hit only when every one of them stores it.
type kindType struct {
	spec      Spec
	blockSize int
	groups    []Group
	full      int // Full: the hit blocks of the last pass, -1 before the first
}

// has reports whether block i is stored in every group of the type.
func (t *kindType) has(i int) bool {
	for _, g := range t.groups {
		if i >= len(g.IDs) || !g.Exists(g.IDs[i]) {
			return false
		}
	}
	return true
}

// HitLength is the number of tokens, at most maxTokens, that vLLM's
// hybrid manager (HybridKVCacheCoordinator.find_longest_cache_hit) takes
// as a prefix-cache hit of these groups: every kind of group in turn cuts
// the candidate length (full attention left to right, sliding window and
// Mamba right to left from it, chunked local attention within the last
// chunk), every length a multiple of the least common multiple of the
// block sizes, until no kind cuts it further. vLLM passes maxTokens =
// the prompt's length - 1, so that the last token is computed. Groups of
// the same spec and block size count a block as stored only when all of
// them store it.
func HitLength(groups []Group, maxTokens int) (int, error) {
	types, align, err := typesOf(groups)
	if err != nil {
		return 0, err
	}
	// One full-attention kind and one other: one pass suffices (vLLM's
	// simple hybrid), since the full kind accepts any shorter prefix.
	simple := len(types) == 2 && types[0].spec.Kind == Full
	hit := max(maxTokens, 0)
	for {
		cur := hit
		for _, t := range types {
			cur = t.cut(cur, align)
		}
		if cur >= hit {
			return hit, nil
		}
		hit = cur
		if simple {
			return hit, nil
		}
	}
}

// cut returns the longest hit of the type within maxLen tokens.
func (t *kindType) cut(maxLen, align int) int {
	bs := t.blockSize
	n := min(maxLen/bs, len(t.groups[0].IDs))
	switch t.spec.Kind {
	case Full:
		if t.full >= 0 {
			// A later pass: the prefix found before, cut to maxLen.
			t.full = min(t.full, maxLen/bs)
			return t.full * bs
		}
		hit := 0
		for hit < n && t.has(hit) {
			hit++
		}
		for bs != align && hit*bs%align != 0 {
			hit--
		}
		t.full = hit
		return hit * bs
	case SlidingWindow:
		return t.window(n, align) * bs
	case ChunkedLocal:
		start := maxLen / t.spec.Window * t.spec.Window / bs
		hit := start
		for hit < n && t.has(hit) {
			hit++
		}
		return max(hit, start) * bs
	default: // Mamba: the rightmost aligned state.
		for i := n - 1; i >= 0; i-- {
			if t.has(i) && (bs == align || (i+1)*bs%align == 0) {
				return (i + 1) * bs
			}
		}
		return 0
	}
}

// window is the sliding-window hit, in blocks, among the first n: right
// to left, the first run of ceil((Window-1)/bs) stored blocks whose right
// end is aligned; without one, the run of stored blocks from block 0.
func (t *kindType) window(n, align int) int {
	bs := t.blockSize
	need := (t.spec.Window - 1 + bs - 1) / bs
	run := 0
	for i := n - 1; i >= 0; i-- {
		if !t.has(i) {
			run = 0
			continue
		}
		if run == 0 && bs != align && (i+1)*bs%align != 0 {
			continue
		}
		run++
		if run >= need {
			return i + run
		}
	}
	return run
}

// typesOf checks the groups and gathers them by spec and block size, full
// attention first, each kind in the order of its first group; align is
// the least common multiple of the block sizes.
func typesOf(groups []Group) ([]*kindType, int, error) {
	if len(groups) == 0 {
		return nil, 0, fmt.Errorf("%w: no group", ErrGroups)
	}
	var types []*kindType
	align := 1
	for pass := 0; pass < 2; pass++ {
		for i, g := range groups {
			if (g.Spec.Kind == Full) != (pass == 0) {
				continue
			}
			if err := check(g); err != nil {
				return nil, 0, fmt.Errorf("group %d: %w", i, err)
			}
			align = lcm(align, g.BlockSize)
			t := find(types, g)
			if t == nil {
				t = &kindType{spec: g.Spec, blockSize: g.BlockSize, full: -1}
				types = append(types, t)
			} else if len(g.IDs) != len(t.groups[0].IDs) {
				return nil, 0, fmt.Errorf("%w: group %d has %d ids, its kind's first group %d", ErrGroups, i, len(g.IDs), len(t.groups[0].IDs))
			}
			t.groups = append(t.groups, g)
		}
	}
	return types, align, nil
}

func find(types []*kindType, g Group) *kindType {
	for _, t := range types {
		if t.spec == g.Spec && t.blockSize == g.BlockSize {
			return t
		}
	}
	return nil
}

func check(g Group) error {
	switch {
	case g.BlockSize < 1:
		return fmt.Errorf("%w: block size %d", ErrGroups, g.BlockSize)
	case g.Spec.Kind > Mamba:
		return fmt.Errorf("%w: unknown kind %d", ErrGroups, g.Spec.Kind)
	case (g.Spec.Kind == SlidingWindow || g.Spec.Kind == ChunkedLocal) && g.Spec.Window < 1:
		return fmt.Errorf("%w: %s needs a window >= 1", ErrGroups, g.Spec)
	case g.Exists == nil:
		return fmt.Errorf("%w: no existence predicate", ErrGroups)
	}
	return nil
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// Needed is the range [first, end) of block indices of a group of spec
// and blockSize that a hit of hit tokens (a multiple of blockSize) needs
// loaded: full attention every block, a sliding window the blocks
// covering the last Window-1 tokens, chunked local attention the blocks
// of the last chunk, Mamba the block that ends at hit (none for a hit of
// 0).
func Needed(spec Spec, blockSize, hit int) (first, end int) {
	end = hit / blockSize
	switch spec.Kind {
	case SlidingWindow:
		first = max(end-(spec.Window-1+blockSize-1)/blockSize, 0)
	case ChunkedLocal:
		first = hit / spec.Window * spec.Window / blockSize
	case Mamba:
		first = max(end-1, 0)
	}
	return first, end
}
