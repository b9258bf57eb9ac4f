package integration

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/ucmproto"
)

// ucmScenario is what one replay of UCM PosixStore's protocol leaves: the
// files of the store (name -> bytes, '.' and .tmp names left out) and the
// ids its GC removed.
type ucmScenario struct {
	files map[string][]byte
	gone  []string
}

// ucmData is the payload of block id: its md5-seeded bytes.
func ucmData(id string, n int) []byte {
	r := rand.New(rand.NewPCG(uint64(len(id)), uint64(md5.Sum([]byte(id))[0])+1))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	copy(b, id)
	return b
}

// replayUCM runs UCM's PosixStore protocol on st: setup (twice), the
// startup I/O check, misses, dumps of
// two batches a second apart (and one failed dump; two empty blocks, one
// renamed from an empty .tmp), lookups, loads checked
// byte for byte, hotness on half of the first batch, the GC lease and config guard, and a
// GC of the cold half.
func replayUCM(t *testing.T, st *ucmproto.Store, salt string) ucmScenario {
	t.Helper()
	batchA, batchB := testIDs(salt+"/a", 8), testIDs(salt+"/b", 8)
	failed := testIDs(salt+"/fail", 1)[0]
	all := slices.Concat(batchA, batchB, []string{failed})
	if err := st.Setup(); err != nil {
		t.Fatal(err)
	}
	if err := st.Setup(); err != nil { // a second start: every mkdir is EEXIST
		t.Fatal(err)
	}
	if err := st.HealthCheck(testIDs(salt+"/health", 1)[0]); err != nil {
		t.Fatal(err)
	}
	lookup := func(ids []string, want bool) {
		t.Helper()
		for _, id := range ids {
			if hit, err := st.Lookup(id); err != nil || hit != want {
				t.Fatalf("%s: lookup %s = %v, %v; want %v", st.Root, id, hit, err, want)
			}
		}
	}
	lookup(all, false)
	dump := func(ids []string, fail bool) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, len(ids))
		for i, id := range ids {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = st.Dump(id, ucmData(id, st.BlockSize()), fail) }()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: dump %s: %v", st.Root, ids[i], err)
			}
		}
	}
	dump(batchA, false)
	dump([]string{failed}, true)
	time.Sleep(1100 * time.Millisecond) // GC orders by st_mtime in seconds
	dump(batchB, false)
	empty := testIDs(salt+"/empty", 2)
	for i, id := range empty {
		if err := st.DumpEmpty(id, i == 0); err != nil {
			t.Fatalf("%s: %v", st.Root, err)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	lookup(slices.Concat(batchA, batchB, empty), true)
	for _, id := range empty {
		if got, err := os.ReadFile(st.Path(id, false)); err != nil || len(got) != 0 {
			t.Fatalf("%s: load of empty block %s: %d bytes, %v", st.Root, id, len(got), err)
		}
	}
	lookup([]string{failed}, false)
	for _, id := range slices.Concat(batchA, batchB) {
		got, err := st.Load(id)
		if err != nil || !bytes.Equal(got, ucmData(id, st.BlockSize())) {
			t.Fatalf("%s: load %s: %v (bytes equal: %v)", st.Root, id, err, bytes.Equal(got, ucmData(id, st.BlockSize())))
		}
	}
	for _, id := range batchA[:4] {
		if err := st.Touch(id); err != nil {
			t.Fatalf("%s: utime %s: %v", st.Root, id, err)
		}
	}
	if err := st.GCLease("host.1." + salt); err != nil {
		t.Fatalf("%s: %v", st.Root, err)
	}
	if err := st.GCConfig("host.1."+salt, "version=1\nblock_size="+strconv.Itoa(st.BlockSize())+"\n"); err != nil {
		t.Fatalf("%s: %v", st.Root, err)
	}
	gone, err := st.GC(4)
	if err != nil {
		t.Fatal(err)
	}
	lookup(gone, false)
	return ucmScenario{files: readTree(t, st.Root), gone: gone}
}

// readTree reads every regular file under root whose name has no '.'
// prefix and no .tmp, by relative path.
func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	return readTreeWhere(t, root, func(name string) bool {
		return strings.HasPrefix(name, ".") || strings.Contains(name, ".tmp")
	})
}

// readTreeWhere reads every regular file under root but those whose name
// skip names, by relative path.
func readTreeWhere(t *testing.T, root string, skip func(name string) bool) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || skip(e.Name()) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree reports the differences of two trees.
func sameTree(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(got) != len(want) {
		t.Errorf("%s: %d files, want %d", what, len(got), len(want))
	}
	for _, n := range names {
		if g, ok := got[n]; !ok || !bytes.Equal(g, want[n]) {
			t.Errorf("%s: %s: present %v, %d bytes, want %d bytes identical", what, n, ok, len(g), len(want[n]))
		}
	}
}

// ctl writes one request to a control file of mnt and returns the answer.
func ctl(t *testing.T, mnt, file, req string) string {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(mnt, ".ucm", file), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(req + "\n"); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4096)
	n, err := f.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:n])
}

// TestUCMPosixProtocol replays UCM PosixStore's syscall protocol (setup,
// lookup, dump by several threads with rename while others write, failed
// dump, load, hotness, GC) in psync, O_DIRECT and aio modes with shard
// widths 3, 2 and 0, on a ucm-posix model directory of the real binary
// (made at the mount root under --default-layout ucm-posix) and on a
// plain directory: the same blocks hit and miss, the same files are
// removed by GC, and the two trees are byte-identical. Then the model's
// nvme tier directory is itself that tree (UCM reads it directly), the
// blocks carry their CRC-32C, and .ucm/lookup sees them. With passthrough
// (the default as root) and without it.
func TestUCMPosixProtocol(t *testing.T) {
	for _, pass := range []bool{true, false} {
		t.Run(fmt.Sprintf("passthrough=%v", pass), func(t *testing.T) { ucmProtocol(t, pass) })
	}
}

func ucmProtocol(t *testing.T, passthrough bool) {
	args := []string{"--default-layout", "ucm-posix", "--memory", "256MiB"}
	if !passthrough {
		args = append(args, "--no-passthrough")
	}
	d := mountUCM(t, mountOpts{Args: args})
	plainRoot := filepath.Join(testDir(t), "plain")
	var wg sync.WaitGroup
	for _, mode := range []ucmproto.Mode{ucmproto.Psync, ucmproto.Direct, ucmproto.AIO} {
		for _, w := range []int{3, 2, 0} {
			model := fmt.Sprintf("ucm-%s-%d", mode, w)
			wg.Add(1)
			t.Run(model, func(t *testing.T) {
				defer wg.Done()
				t.Parallel()
				ucmCase(t, d, filepath.Join(plainRoot, model), model, mode, w)
			})
		}
	}
}

// ucmCase is one mode and width of TestUCMPosixProtocol.
func ucmCase(t *testing.T, d *daemon, plain, model string, mode ucmproto.Mode, w int) {
	mk := func(root string) *ucmproto.Store {
		return &ucmproto.Store{Root: root, Width: w, Mode: mode, Shards: 4, ShardSize: 32 << 10, TensorSize: 16 << 10, Shuffle: true}
	}
	for _, root := range []string{plain, d.path(model)} {
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := getxattr(d.path(model), "user.ucm.layout"); err != nil || b != "ucm-posix" {
		t.Fatalf("layout of a model made under --default-layout ucm-posix: %q %v", b, err)
	}
	var onMount, onPlain ucmScenario
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); onPlain = replayUCM(t, mk(plain), model) }()
	onMount = replayUCM(t, mk(d.path(model)), model)
	wg.Wait()
	if t.Failed() {
		return
	}
	if !slices.Equal(onMount.gone, onPlain.gone) {
		t.Errorf("GC removed %v on the mount, %v on a plain directory", onMount.gone, onPlain.gone)
	}
	sameTree(t, "mount vs plain directory", onMount.files, onPlain.files)

	// The tier directory is a PosixStore directory with the same files.
	if got := ctl(t, d.Mnt, "flush", "model "+model); got != "ok flushed\n" {
		t.Fatalf("flush: %q", got)
	}
	tier := filepath.Join(d.Tier, model)
	sameTree(t, "nvme tier vs plain directory", readTree(t, tier), onPlain.files)
	direct := mk(tier)
	var ids []string
	for rel := range onPlain.files {
		id := filepath.Base(rel)
		ids = append(ids, id)
		if len(onPlain.files[rel]) == 0 {
			// an empty block: sameTree saw it on the tier
		} else if got, err := direct.Load(id); err != nil || !bytes.Equal(got, onPlain.files[rel]) {
			t.Errorf("loading %s from the tier directory: %v", id, err)
		}
		crc, err := getxattr(d.path(model, rel), "user.ucm.crc32c")
		if want := fmt.Sprintf("%08x", format.CRC32C(onPlain.files[rel])); err != nil || crc != want {
			t.Errorf("%s: user.ucm.crc32c %q %v, want %s", rel, crc, err, want)
		}
	}
	sort.Strings(ids)
	req := "exists " + model + " " + strings.Join(append(ids, onPlain.gone...), " ")
	want := fmt.Sprintf("ok %d %s%s\n", len(ids), strings.Repeat("1", len(ids)), strings.Repeat("0", len(onPlain.gone)))
	if got := ctl(t, d.Mnt, "lookup", req); got != want {
		t.Errorf(".ucm/lookup: %q, want %q", got, want)
	}
}
