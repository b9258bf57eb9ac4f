package format

import (
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// ucmVectors were computed with testdata/ucm_vectors.py (Python 3.11's
// pickle), which follows UCM's RequestHasher.
var ucmVectors = []struct {
	meta   string
	mla    bool
	block  int
	tokens []uint32
	seed   string
	ids    []string
}{
	// The example of UCM's own store: Llama-3.1-8B, tokens 1..10, block 4.
	{"meta-llama/Llama-3.1-8B:1:torch.bfloat16:0", false, 4, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		"4d0cf2fe57eb92d6b973cc8eeedeb601", []string{"70d041f7bf6e6481271587bc0a8ee4d3", "969255022c1273531fb7cd54f9e5fec2"}},
	{"meta-llama/Llama-3.1-8B:2:torch.bfloat16:0", false, 4, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		"a51cc23f9f06db86bab95e0655592eaf", []string{"628c1e0d4e7e6829589e0eaf749dd8c5", "db0a889e312cf9372b778649c4d5774f"}},
	{"meta-llama/Llama-3.1-8B:2:torch.bfloat16:1", false, 4, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		"a51cc23f9f06db86bab95e0655592eaf", []string{"3d8389ffc4e6e43e56ef833ae322409e", "48a08eecf7f2496100304c63fdd0a9c9"}},
	// MLA: every rank uses rank 0's ids.
	{"meta-llama/Llama-3.1-8B:2:torch.bfloat16:1", true, 4, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		"a51cc23f9f06db86bab95e0655592eaf", []string{"628c1e0d4e7e6829589e0eaf749dd8c5", "db0a889e312cf9372b778649c4d5774f"}},
	// Tokens of every pickle int opcode: BININT1, BININT2, BININT, LONG1.
	{"Qwen/Qwen2.5-7B-Instruct:4:torch.float16:3", false, 3, []uint32{0, 255, 256, 65535, 65536, 151643, 2147483648, 4294967295, 7},
		"1521a32151837def7c982336a99180ea", []string{"98acf6fe04f0e3f20a3d26e7511a9560", "345f0dde60016b5f829d88a9d453a68c", "6d9d25eaad81794056d4d2d74b101168"}},
}

func TestUCMChainGolden(t *testing.T) {
	for _, v := range ucmVectors {
		m, err := ParseMeta(v.meta)
		if err != nil {
			t.Fatal(err)
		}
		if got := UCMSeed(m).String(); got != v.seed {
			t.Errorf("UCMSeed(%s) = %s, want %s", v.meta, got, v.seed)
		}
		if got := idStrings(UCMChain(m, v.mla, v.block, v.tokens)); !slices.Equal(got, v.ids) {
			t.Errorf("UCMChain(%s, mla %v) = %v, want %v", v.meta, v.mla, got, v.ids)
		}
	}
}

func TestParseMeta(t *testing.T) {
	m, err := ParseMeta("/models/a:b:2:torch.bfloat16:1")
	if err != nil || m != (UCMMeta{"/models/a:b", 2, "torch.bfloat16", 1}) || m.String() != "/models/a:b:2:torch.bfloat16:1" {
		t.Errorf("ParseMeta = %+v, %v", m, err)
	}
	for _, bad := range []string{"", "a:1:x", "a:0:x:0", "a:2:x:2", "a:2:x:-1", "a:x:x:0", "a:1:x:y"} {
		if _, err := ParseMeta(bad); err == nil {
			t.Errorf("ParseMeta(%q) succeeded", bad)
		}
	}
}

// TestUCMChainAgainstPython compares random prompts with the ids
// testdata/ucm_vectors.py computes with python3's own pickle.
func TestUCMChainAgainstPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the fixed vectors of TestUCMChainGolden still apply")
	}
	type req struct {
		Model  string   `json:"model"`
		TP     int      `json:"tp"`
		Dtype  string   `json:"dtype"`
		Rank   int      `json:"rank"`
		MLA    bool     `json:"mla"`
		Block  int      `json:"block"`
		Tokens []uint32 `json:"tokens"`
	}
	r := rand.New(rand.NewPCG(4, 14))
	var reqs []req
	var in strings.Builder
	for i := 0; i < 40; i++ {
		q := req{Model: []string{"meta-llama/Llama-3.1-8B", "/data/models/Qwen3-32B", "é:x"}[r.IntN(3)],
			TP: 1 + r.IntN(8), Dtype: []string{"torch.bfloat16", "torch.float16"}[r.IntN(2)],
			MLA: r.IntN(3) == 0, Block: []int{1, 16, 128, 14000}[r.IntN(4)]}
		q.Rank = r.IntN(q.TP)
		for j := r.IntN(3 * q.Block); j > 0; j-- {
			q.Tokens = append(q.Tokens, []uint32{r.Uint32N(256), r.Uint32N(200000), r.Uint32()}[r.IntN(3)])
		}
		reqs = append(reqs, q)
		b, _ := json.Marshal(q)
		in.Write(append(b, '\n'))
	}
	cmd := exec.Command(py, "testdata/ucm_vectors.py")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 testdata/ucm_vectors.py: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(reqs) {
		t.Fatalf("python3 printed %d lines for %d requests", len(lines), len(reqs))
	}
	for i, q := range reqs {
		m := UCMMeta{q.Model, q.TP, q.Dtype, q.Rank}
		got := append([]string{UCMSeed(m).String()}, idStrings(UCMChain(m, q.MLA, q.Block, q.Tokens))...)
		if want := strings.Fields(lines[i]); !slices.Equal(got, want) {
			t.Errorf("%s mla %v block %d, %d tokens: %v, python3 %v", m, q.MLA, q.Block, len(q.Tokens), got, want)
		}
	}
}
