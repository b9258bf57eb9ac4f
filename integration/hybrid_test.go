package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/hybrid"
)

const hybridModel = "org--Hybrid-7B"

// groupIDs runs `ucmfs hash --group` for every group and returns the id
// list of each, by group id.
func groupIDs(t *testing.T, meta string, blockSize int, tokens []uint32, gids ...int) map[int][]format.ID {
	t.Helper()
	args := []string{"hash", "--meta", meta, "--block-size", strconv.Itoa(blockSize)}
	for _, g := range gids {
		args = append(args, "--group", strconv.Itoa(g))
	}
	for _, tok := range tokens {
		args = append(args, strconv.FormatUint(uint64(tok), 10))
	}
	out, err := exec.Command(ucmfsBin, args...).Output()
	if err != nil {
		t.Fatalf("ucmfs hash: %v", err)
	}
	ids := map[int][]format.ID{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line) // <gid> <index> <id> <hh>/<id>.bin
		gid, _ := strconv.Atoi(f[0])
		id, err := format.ParseID(f[2])
		if err != nil || len(f) != 4 || f[1] != strconv.Itoa(len(ids[gid])) {
			t.Fatalf("ucmfs hash printed %q", line)
		}
		ids[gid] = append(ids[gid], id)
	}
	return ids
}

// TestHybridHitThroughMount is the example of vLLM's hybrid manager: a
// full-attention group 0 and two sliding-window groups 1 and 2 (window
// 32), block 16, a 112-token prompt. The ids come from the real binary
// (`ucmfs hash --group`), one model directory per group holds the blocks,
// and the hit is computed from what the mount stores: the whole prompt
// while everything is there, 80 tokens once a block inside group 1's
// window is unlinked, and a block the window no longer needs changes
// nothing.
func TestHybridHitThroughMount(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	tokens := make([]uint32, 112)
	for i := range tokens {
		tokens[i] = uint32(128000 + 7*i)
	}
	ids := groupIDs(t, "org/Hybrid-7B:1:bfloat16:0", 16, tokens, 0, 1, 2)
	specs := []hybrid.Spec{{Kind: hybrid.Full}, {Kind: hybrid.SlidingWindow, Window: 32}, {Kind: hybrid.SlidingWindow, Window: 32}}
	model := func(gid int) string { return hybridModel + ".g" + strconv.Itoa(gid) }
	var groups []hybrid.Group
	for gid, spec := range specs {
		sh(t, "mkdir", d.path(model(gid)))
		sh(t, "setfattr", "-n", "user.ucm.group", "-v", spec.String(), d.path(model(gid)))
		if len(ids[gid]) != 7 {
			t.Fatalf("group %d has %d ids, want 7", gid, len(ids[gid]))
		}
		for _, id := range ids[gid] {
			if err := writeVerdict(blockPath(d.Mnt, model(gid), id.String()), goodBlock(id.String())); err != nil {
				t.Fatal(err)
			}
		}
		root := d.path(model(gid))
		exists := func(id format.ID) bool {
			_, err := os.Stat(blockPath(root, "", id.String()))
			return err == nil
		}
		groups = append(groups, hybrid.Group{Spec: spec, BlockSize: 16, IDs: ids[gid], Exists: exists})
	}
	// The daemon's answer to the hybrid lookup, checked against the same
	// computation from stat of every block.
	req := "hybrid 119" // a follow-up prompt of 120 tokens
	for gid := range specs {
		req += fmt.Sprintf(" %s 16 %d", model(gid), len(ids[gid]))
		for _, id := range ids[gid] {
			req += " " + id.String()
		}
	}
	hit := func() int {
		t.Helper()
		n, err := hybrid.HitLength(groups, 119)
		if err != nil {
			t.Fatal(err)
		}
		a := controlRequest(t, d, "lookup", req)
		var got int
		if _, err := fmt.Sscanf(a, "ok %d", &got); err != nil || got != n {
			t.Fatalf("hybrid lookup: %q, want a hit of %d", a, n)
		}
		return n
	}
	if n := hit(); n != 112 {
		t.Fatalf("every block stored: hit %d, want 112", n)
	}
	unlink := func(gid, i int) {
		t.Helper()
		if err := os.Remove(blockPath(d.Mnt, model(gid), ids[gid][i].String())); err != nil {
			t.Fatal(err)
		}
	}
	unlink(2, 1) // outside the window: not needed
	if n := hit(); n != 112 {
		t.Errorf("without group 2's block 1: hit %d, want 112", n)
	}
	unlink(1, 5) // inside group 1's window
	if n := hit(); n != 80 {
		t.Errorf("without group 1's block 5: hit %d, want 80", n)
	}
	if first, end := hybrid.Needed(specs[1], 16, 80); first != 3 || end != 5 {
		t.Errorf("group 1 needs blocks [%d, %d) for a hit of 80, want [3, 5)", first, end)
	}
	if a := controlRequest(t, d, "lookup", req); a != "ok 80 0-5 3-5 3-5" {
		t.Errorf("hybrid lookup after the losses: %q, want ok 80 0-5 3-5 3-5", a)
	}
	if got := sh(t, "getfattr", "-n", "user.ucm.group", "--only-values", d.path(model(1))); got != "swa:32" {
		t.Errorf("user.ucm.group: %q", got)
	}
}

// controlRequest sends one request line to .ucm/<file> and returns the
// answer line without its end.
func controlRequest(t *testing.T, d *daemon, file, req string) string {
	t.Helper()
	f, err := os.OpenFile(d.path(".ucm", file), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(req + "\n"); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1<<16)
	n, err := f.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b[:n]), "\n")
}
