package integration

import (
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestClientHashKeysMatchGo runs `ucmfs hash` and the Python client's
// `ucmcli hash` on the same random prompts with extra keys, groups, and
// UCM's scheme on several ranks, and compares their ids: two
// implementations, Go's with its own pickle encoder and Python's with
// Python's pickle.
func TestClientHashKeysMatchGo(t *testing.T) {
	requireTool(t, "python3")
	r := rand.New(rand.NewPCG(14, 3))
	for n := 0; n < 12; n++ {
		bs := []int{1, 4, 16, 64}[r.IntN(4)]
		var tokens []string
		for i := r.IntN(5 * bs); i >= 0; i-- {
			tokens = append(tokens, strconv.FormatUint(uint64([]uint32{r.Uint32N(256), r.Uint32N(1 << 17), r.Uint32()}[r.IntN(3)]), 10))
		}
		var flags []string
		ucm := n%3 == 2
		if ucm {
			tp := 1 + r.IntN(4)
			flags = append(flags, "--scheme", "ucm", "--meta", "/models/Qwen3-8B:"+strconv.Itoa(tp)+":torch.float16:"+strconv.Itoa(r.IntN(tp)))
			if r.IntN(2) == 0 {
				flags = append(flags, "--mla")
			}
		} else {
			flags = append(flags, "--meta", "org/Hybrid-7B:2:bfloat16:1")
			if r.IntN(2) == 0 {
				flags = append(flags, "--salt", "tenant-"+strconv.Itoa(r.IntN(1000)))
			}
			if r.IntN(2) == 0 {
				flags = append(flags, "--lora", "adapter é "+strconv.Itoa(n))
			}
			for i := r.IntN(3); i > 0; i-- {
				flags = append(flags, "--mm", "sha256:"+strconv.Itoa(r.IntN(99))+"@"+strconv.Itoa(r.IntN(len(tokens)+1)))
			}
			for i := r.IntN(3); i > 0; i-- {
				flags = append(flags, "--embeds", []string{"", "e" + strconv.Itoa(i)}[r.IntN(2)])
			}
			for g := r.IntN(3); g > 0; g-- {
				flags = append(flags, "--group", strconv.Itoa(g)+[]string{"", ":2", ":8"}[r.IntN(3)])
			}
		}
		args := append(append([]string{"hash", "--block-size", strconv.Itoa(bs)}, flags...), tokens...)
		out, err := exec.Command(ucmfsBin, args...).Output()
		if err != nil {
			t.Fatalf("ucmfs %v: %v", args, err)
		}
		// ucmfs prints [<gid>] <index> <id> <path>; ucmcli [<gid>] <id>.
		var want []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(line); len(f) == 4 {
				want = append(want, f[0]+" "+f[2])
			} else if len(f) == 3 {
				want = append(want, f[1])
			}
		}
		got := strings.Split(strings.TrimSpace(mustPy(t, args...)), "\n")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%v:\n python %v\n go     %v", flags, got, want)
		}
	}
}
