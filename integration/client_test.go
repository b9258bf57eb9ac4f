package integration

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// Shape of the blocks `ucmcli put` writes by default: 4 layers,
// K and V, 16 tokens, 2 heads of 64 float16 values.
const (
	testPayload = 4 * 2 * 16 * 2 * 64 * 2
	testSize    = format.HeaderSize + testPayload
)

// pyResult is the outcome of one client run.
type pyResult struct {
	Out, Err string
	Code     int
}

// Errno is the errno name the client reported ("EINVAL"), or "".
func (r pyResult) Errno() string {
	if m := regexp.MustCompile(`: (E[A-Z0-9]+): `).FindStringSubmatch(r.Err); m != nil {
		return m[1]
	}
	return ""
}

// py runs the reference client in its own process.
func py(t *testing.T, args ...string) pyResult {
	t.Helper()
	requireTool(t, "python3")
	return runPy(args...)
}

// mustPy runs the client and fails the test unless it exits 0.
func mustPy(t *testing.T, args ...string) string {
	t.Helper()
	r := py(t, args...)
	if r.Code != 0 {
		t.Fatalf("ucmcli %s: exit %d\n%s%s", strings.Join(args, " "), r.Code, r.Out, r.Err)
	}
	return r.Out
}

// testIDs returns n distinct block ids (hex) derived from salt.
func testIDs(salt string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%x", md5.Sum([]byte(salt+"/"+strconv.Itoa(i))))
	}
	return ids
}

// makeShards creates the shard directories of ids under root/model, so
// the client can write into a plain directory laid out like a tier.
func makeShards(t testing.TB, root, model string, ids []string) {
	t.Helper()
	for _, id := range ids {
		if err := os.MkdirAll(filepath.Join(root, model, id[:2]), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// blockPath is root/model/hh/id.bin.
func blockPath(root, model, id string) string {
	return filepath.Join(root, model, id[:2], id+".bin")
}

// TestClientMatchesGo checks the Python client against the Go
// implementation: the hash chain, CRC-32C and the UCMB header it writes.
func TestClientMatchesGo(t *testing.T) {
	meta := format.Meta("meta-llama/Llama-3.1-8B", 2, "bfloat16", 1)
	tokens := make([]uint32, 0, 100)
	args := []string{"hash", "--meta", meta, "--block-size", "16"}
	for i := range 100 {
		tok := uint32(i*7919 + 100000) // ids above 255 need all four bytes
		tokens = append(tokens, tok)
		args = append(args, strconv.FormatUint(uint64(tok), 10))
	}
	var want []string
	for _, id := range format.Chain(meta, 16, tokens) {
		want = append(want, id.String())
	}
	if got := strings.Fields(mustPy(t, args...)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("chain\n python %v\n go     %v", got, want)
	}
	// The binary's `ucmfs hash` prints "<index> <id> <hh>/<id>.bin".
	cli := append([]string{"hash"}, args[1:]...)
	if out, err := exec.Command(ucmfsBin, cli...).Output(); err != nil {
		t.Errorf("ucmfs %v: %v", cli, err)
	} else {
		for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(line); len(f) < 2 || i >= len(want) || f[1] != want[i] {
				t.Errorf("ucmfs hash line %d: %q, want id %s", i, line, want[i])
			}
		}
	}

	dir := t.TempDir()
	data := bytes.Repeat([]byte("ucmfs\x00\xff"), 4099)
	os.WriteFile(filepath.Join(dir, "data"), data, 0o644)
	if got, want := strings.TrimSpace(mustPy(t, "crc", filepath.Join(dir, "data"))), format.FormatCRC(format.CRC32C(data)); got != want {
		t.Errorf("crc32c: python %s, go %s", got, want)
	}

	ids := testIDs("client", 2)
	makeShards(t, dir, "m", ids)
	mustPy(t, "put", dir, "m", ids[0], "--dtype", "bfloat16", "--layers", "3")
	mustPy(t, "put", dir, "m", ids[1], "--no-crc", "--heads", "0", "--head-dim", "0")
	for _, id := range ids {
		if err := format.VerifyFile(blockPath(dir, "m", id)); err != nil {
			t.Errorf("Go rejects the client's block %s: %v", id, err)
		}
	}
	raw, _ := os.ReadFile(blockPath(dir, "m", ids[0]))
	h, err := format.DecodeBlockHeader(raw)
	if err != nil || h.ID.String() != ids[0] || h.NumLayers != 3 || h.Dtype != format.BFloat16 ||
		h.NumKVHeads != 2 || h.HeadDim != 64 || !h.HasCRC() || h.PayloadLen != uint64(len(raw)-64) {
		t.Errorf("header %+v, %v", h, err)
	}
	// pread of one layer: layer 2 starts at 64 + 2*T*S.
	s := int(h.TensorBytes())
	layer := raw[64+2*2*s : 64+3*2*s]
	if got := mustPy(t, "layer", dir, "m", ids[0], "2"); got != fmt.Sprintf("%d %s\n", len(layer), format.FormatCRC(format.CRC32C(layer))) {
		t.Errorf("layer 2: python says %q", got)
	}
	if got := strings.TrimSpace(mustPy(t, "lookup", dir, "m", ids[0], ids[1], testIDs("absent", 1)[0], ids[0])); got != "2" {
		t.Errorf("lookup prefix %s, want 2", got)
	}
	// A second put of the same id reports "exists" (O_EXCL).
	if out := mustPy(t, "put", dir, "m", ids[0]); !strings.HasPrefix(out, "exists ") {
		t.Errorf("second put: %q", out)
	}
	// verify notices a damaged payload.
	raw[len(raw)-1] ^= 1
	os.WriteFile(blockPath(dir, "m", ids[0]), raw, 0o644)
	if r := py(t, "verify", dir, "m", ids[0]); r.Code != 1 {
		t.Errorf("verify of a damaged block: exit %d %s", r.Code, r.Err)
	}
}
