package hybrid

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// store is a set of stored block ids.
type store map[format.ID]bool

func (s store) exists(id format.ID) bool { return s[id] }

// chain is the ids of group gid of a prompt of n tokens.
func chain(gid, blockSize, n int) []format.ID {
	tokens := make([]uint32, n)
	for i := range tokens {
		tokens[i] = uint32(1000 + i)
	}
	return format.ChainKeys("org/Hybrid-7B:1:bfloat16:0", blockSize, tokens, format.Keys{Group: gid, HasGroup: true})
}

// seedGroups is the example of vLLM's hybrid manager: block 16, a full
// group 0 and two sliding-window groups 1 and 2 of window 32, a prompt of
// 112 tokens (7 blocks each), every block stored.
func seedGroups() ([]Group, store) {
	st := store{}
	var groups []Group
	for gid, spec := range []Spec{{Kind: Full}, {SlidingWindow, 32}, {SlidingWindow, 32}} {
		ids := chain(gid, 16, 112)
		for _, id := range ids {
			st[id] = true
		}
		groups = append(groups, Group{Spec: spec, BlockSize: 16, IDs: ids, Exists: st.exists})
	}
	return groups, st
}

func TestSeedExample(t *testing.T) {
	groups, st := seedGroups()
	hit := func() int {
		t.Helper()
		// A follow-up prompt that starts with the 112 tokens: up to 119
		// tokens may hit.
		n, err := HitLength(groups, 119)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := hit(); n != 112 {
		t.Fatalf("everything stored: hit %d, want 112", n)
	}
	// The same 112-token prompt again: vLLM computes its last token, so
	// the hit stops at the last full block before it.
	if n, _ := HitLength(groups, 111); n != 96 {
		t.Errorf("same prompt: hit %d, want 96", n)
	}
	// Blocks lost one after the other, and the hit after each loss.
	for _, step := range []struct {
		group, block, want int
		why                string
	}{
		{1, 2, 112, "a block the window needs no more is not missed"},
		{1, 5, 80, "inside group 1's window: back to blocks 3 and 4, ending at token 80"},
		{2, 3, 32, "group 2 must hold the window too: blocks 0 and 1 are in both"},
		{0, 1, 16, "a full-attention block cuts everything after it"},
	} {
		delete(st, groups[step.group].IDs[step.block])
		if n := hit(); n != step.want {
			t.Errorf("without block %d of group %d: hit %d, want %d (%s)", step.block, step.group, n, step.want, step.why)
		}
	}
	for i, w := range [][2]int{{0, 1}, {0, 1}, {0, 1}} {
		if f, e := Needed(groups[i].Spec, 16, 16); f != w[0] || e != w[1] {
			t.Errorf("Needed group %d at 16 = [%d, %d), want %v", i, f, e, w)
		}
	}
}

func TestHitKinds(t *testing.T) {
	cases := []struct {
		name    string
		groups  []Spec
		sizes   []int
		missing map[int][]int // group -> block indices not stored
		max     int
		want    int
	}{
		{"full alone", []Spec{{Kind: Full}}, []int{16}, map[int][]int{0: {4}}, 200, 64},
		{"full, nothing missing, capped", []Spec{{Kind: Full}}, []int{16}, nil, 100, 96},
		// Mamba: the rightmost stored state within the full hit.
		{"mamba", []Spec{{Kind: Full}, {Kind: Mamba}}, []int{16, 16}, map[int][]int{1: {5, 6, 7, 8, 9}}, 200, 80},
		{"mamba, no state", []Spec{{Kind: Full}, {Kind: Mamba}}, []int{16, 16}, map[int][]int{1: {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, 200, 0},
		// Mamba blocks of 64, full of 16: lengths align to 64.
		{"mamba aligned", []Spec{{Kind: Full}, {Kind: Mamba}}, []int{16, 64}, map[int][]int{0: {7}}, 200, 64},
		{"mamba aligned, long", []Spec{{Kind: Full}, {Kind: Mamba}}, []int{16, 64}, map[int][]int{0: {9}}, 200, 128},
		// Chunked local, chunk 64: only the last chunk's blocks count.
		{"chunk", []Spec{{Kind: Full}, {ChunkedLocal, 64}}, []int{16, 16}, map[int][]int{1: {0, 1, 2, 3, 9}}, 159, 144},
		{"chunk, missing in last chunk", []Spec{{Kind: Full}, {ChunkedLocal, 64}}, []int{16, 16}, map[int][]int{1: {8}}, 159, 128},
		// Sliding window with nothing long enough: the stored run from 0.
		{"window, no run", []Spec{{Kind: Full}, {SlidingWindow, 64}}, []int{16, 16}, map[int][]int{1: {1, 4, 7}}, 159, 16},
		// Three kinds: iterate until nothing cuts. The window stops at 112,
		// Mamba at 80, where the window lacks block 4: 64.
		{"full, window, mamba", []Spec{{Kind: Full}, {SlidingWindow, 32}, {Kind: Mamba}}, []int{16, 16, 16},
			map[int][]int{1: {7, 4}, 2: {5, 6}}, 159, 64},
	}
	for _, c := range cases {
		st := store{}
		var groups []Group
		for gid, spec := range c.groups {
			ids := chain(gid, c.sizes[gid], 160)
			for _, id := range ids {
				st[id] = true
			}
			for _, i := range c.missing[gid] {
				delete(st, ids[i])
			}
			groups = append(groups, Group{Spec: spec, BlockSize: c.sizes[gid], IDs: ids, Exists: st.exists})
		}
		if got, err := HitLength(groups, c.max); err != nil || got != c.want {
			t.Errorf("%s: hit %d %v, want %d", c.name, got, err, c.want)
		}
	}
}

func TestNeeded(t *testing.T) {
	for _, c := range []struct {
		spec              Spec
		bs, hit, first, e int
	}{
		{Spec{Kind: Full}, 16, 96, 0, 6},
		{Spec{SlidingWindow, 32}, 16, 96, 4, 6},
		{Spec{SlidingWindow, 4096}, 16, 96, 0, 6},
		{Spec{ChunkedLocal, 64}, 16, 96, 4, 6},
		{Spec{ChunkedLocal, 64}, 16, 128, 8, 8},
		{Spec{Kind: Mamba}, 16, 96, 5, 6},
		{Spec{Kind: Mamba}, 16, 0, 0, 0},
	} {
		if f, e := Needed(c.spec, c.bs, c.hit); f != c.first || e != c.e {
			t.Errorf("Needed(%s, %d, %d) = [%d, %d), want [%d, %d)", c.spec, c.bs, c.hit, f, e, c.first, c.e)
		}
	}
}

func TestSpec(t *testing.T) {
	for _, s := range []string{"full", "swa:4096", "chunk:8192", "mamba"} {
		if p, err := ParseSpec(s); err != nil || p.String() != s {
			t.Errorf("ParseSpec(%q) = %v %v", s, p, err)
		}
	}
	for _, s := range []string{"", "swa", "swa:0", "swa:-1", "swa:x", "swa:01", "chunk:", "sliding:4", "Full"} {
		if _, err := ParseSpec(s); err == nil {
			t.Errorf("ParseSpec(%q) succeeded", s)
		}
	}
}

func TestHitErrors(t *testing.T) {
	ok := func(format.ID) bool { return true }
	for name, groups := range map[string][]Group{
		"none":         nil,
		"block size 0": {{Spec: Spec{Kind: Full}, Exists: ok}},
		"window 0":     {{Spec: Spec{Kind: SlidingWindow}, BlockSize: 16, Exists: ok}},
		"no predicate": {{Spec: Spec{Kind: Full}, BlockSize: 16}},
		"kind":         {{Spec: Spec{Kind: 9}, BlockSize: 16, Exists: ok}},
		"ids differ": {{Spec: Spec{Kind: Full}, BlockSize: 16, Exists: ok, IDs: make([]format.ID, 2)},
			{Spec: Spec{Kind: Full}, BlockSize: 16, Exists: ok, IDs: make([]format.ID, 3)}},
	} {
		if _, err := HitLength(groups, 100); !errors.Is(err, ErrGroups) {
			t.Errorf("%s: %v, want ErrGroups", name, err)
		}
	}
}

func ExampleHitLength() {
	stored := map[format.ID]bool{}
	full, window := chain(0, 16, 112), chain(1, 16, 112)
	for i := range full {
		stored[full[i]], stored[window[i]] = true, i != 5
	}
	exists := func(id format.ID) bool { return stored[id] }
	hit, _ := HitLength([]Group{
		{Spec: Spec{Kind: Full}, BlockSize: 16, IDs: full, Exists: exists},
		{Spec: Spec{Kind: SlidingWindow, Window: 32}, BlockSize: 16, IDs: window, Exists: exists},
	}, 119)
	fmt.Println(hit)
	// Output: 80
}
