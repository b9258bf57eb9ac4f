package integration

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/engineproto"
)

// The file backends of the engines that keep a KV block per file, run by
// their replays (internal/engineproto) on a model of the files layout and
// on a plain directory: each stores, finds, loads (bytes equal), stores
// again and deletes 32 blocks, and the two trees end the same; the nvme
// tier holds the same tree byte for byte once flushed, and every block
// has its CRC-32C.

const engineBlock = 64 << 10 // a multiple of 4096, for O_DIRECT

// engineData is block i's bytes in a replay salted with salt.
func engineData(salt string, i int) []byte {
	seed := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", salt, i)))
	return bytes.Repeat(seed[:], engineBlock/len(seed))
}

// engines are the replays, each over root.
func engines(root, salt string) []engineproto.Engine {
	vllm := engineproto.VLLM{Root: root, Salt: salt, Model: "meta-llama_Llama-3.1-8B", Direct: true}
	llmd := engineproto.LLMD{VLLM: engineproto.VLLM{Root: root, Salt: salt, Model: "Qwen_Qwen3-0.6B", Rank: 1}}
	sgl := engineproto.SGLangFile{Root: root, Salt: salt, Model: "Qwen/Qwen3-8B", TPRank: 0, TPSize: 2}
	return []engineproto.Engine{
		&vllm,
		&llmd,
		&engineproto.LMCache{Root: root, Salt: salt, Model: "meta-llama/Llama-3.1-8B", Direct: true},
		&sgl,
		&engineproto.SGLangFastFile{SGLangFile: engineproto.SGLangFile{Root: root, Salt: salt, Model: "Qwen/Qwen3-8B", TPSize: 1}},
	}
}

// replayEngine runs one engine's scenario; salt names its blocks.
func replayEngine(t *testing.T, e engineproto.Engine, salt string) {
	t.Helper()
	const n = 32
	for range 2 { // a second start finds its directories and config
		if err := e.Setup(); err != nil {
			t.Fatalf("%s: setup: %v", e.Name(), err)
		}
	}
	check := func(i int, want bool) {
		t.Helper()
		if ok, err := e.Exists(i); err != nil || ok != want {
			t.Fatalf("%s: exists %d = %v, %v; want %v", e.Name(), i, ok, err, want)
		}
	}
	for i := range n {
		check(i, false)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for w := range 4 { // the backends' worker threads
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				errs[i] = e.Store(i, engineData(salt, i))
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: store %d: %v", e.Name(), i, err)
		}
	}
	for i := range n {
		check(i, true)
		got, err := e.Load(i, engineBlock)
		if err != nil || !bytes.Equal(got, engineData(salt, i)) {
			t.Fatalf("%s: load %d: %v (bytes equal %v)", e.Name(), i, err, bytes.Equal(got, engineData(salt, i)))
		}
		if err := e.Store(i, engineData(salt, i)); err != nil {
			t.Fatalf("%s: store %d again: %v", e.Name(), i, err)
		}
	}
	for i := 0; i < n; i += 4 {
		if err := e.Delete(i); err != nil {
			t.Fatalf("%s: delete %d: %v", e.Name(), i, err)
		}
		check(i, false)
	}
}

// engineTree reads every regular file under root by relative path,
// leaving out the tier's own records of a model.
func engineTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	return readTreeWhere(t, root, func(name string) bool { return strings.HasPrefix(name, ".ucmfs-") })
}

// TestEngineBackends: every backend's replay on a files model ends with
// the tree it leaves on a plain directory, and the tier holds it.
func TestEngineBackends(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--default-layout", "files", "--memory", "256MiB"}})
	plain := filepath.Join(testDir(t), "plain")
	for i, e := range engines("", "") {
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			model := fmt.Sprintf("eng%d", i)
			mnt, dir := d.path(model), filepath.Join(plain, model)
			for _, p := range []string{mnt, dir} {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if b, err := getxattr(mnt, "user.ucm.layout"); err != nil || b != "files" {
				t.Fatalf("layout of a model made under --default-layout files: %q %v", b, err)
			}
			onMount, onPlain := engines(mnt, name)[i], engines(dir, name)[i]
			replayEngine(t, onPlain, name)
			replayEngine(t, onMount, name)
			want := engineTree(t, dir)
			sameTree(t, name+": mount vs plain directory", engineTree(t, mnt), want)
			if got := ctl(t, d.Mnt, "flush", "model "+model); got != "ok flushed\n" {
				t.Fatalf("flush: %q", got)
			}
			sameTree(t, name+": nvme tier vs plain directory", engineTree(t, filepath.Join(d.Tier, model)), want)
			// .ucm/lookup and .ucm/prefetch name a files model's files by
			// their paths in the model.
			var rels []string
			for rel := range want {
				rels = append(rels, rel)
			}
			slices.Sort(rels)
			req := model + " " + strings.Join(rels, " ") + " absent/file.bin"
			wantBits := fmt.Sprintf("ok %d %s0\n", len(rels), strings.Repeat("1", len(rels)))
			if got := ctl(t, d.Mnt, "lookup", "exists "+req); got != wantBits {
				t.Errorf(".ucm/lookup exists: %q, want %q", got, wantBits)
			}
			if got := ctl(t, d.Mnt, "prefetch", req); got != fmt.Sprintf("ok queued=%d missing=1\n", len(rels)) {
				t.Errorf(".ucm/prefetch: %q", got)
			}
			for rel, b := range want {
				crc, err := getxattr(filepath.Join(mnt, rel), "user.ucm.crc32c")
				if wantCRC := fmt.Sprintf("%08x", format.CRC32C(b)); err != nil || crc != wantCRC {
					t.Errorf("%s: user.ucm.crc32c %q %v, want %s", rel, crc, err, wantCRC)
				}
			}
		})
	}
}

// engineChildEnv names, in a child process of TestEngineProcesses, the
// replay to run: "<engine index> <root> <salt>".
const engineChildEnv = "UCMFS_ENGINE_CHILD"

// TestEngineChild is the body of a child process of TestEngineProcesses;
// run directly it does nothing.
func TestEngineChild(t *testing.T) {
	spec := os.Getenv(engineChildEnv)
	if spec == "" {
		return
	}
	var i int
	var root, salt string
	if _, err := fmt.Sscan(spec, &i, &root, &salt); err != nil {
		t.Fatal(err)
	}
	replayEngine(t, engines(root, salt)[i], salt)
}

// TestEngineProcesses: two processes of vLLM's fs tier and two of
// SGLang's file backend share one files model, all at once, and leave
// the tree the same runs leave in a plain directory.
func TestEngineProcesses(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--default-layout", "files"}})
	plain := filepath.Join(testDir(t), "plain")
	mnt := d.path("shared")
	for _, p := range []string{mnt, plain} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(root string) {
		var cmds []*exec.Cmd
		var outs []*bytes.Buffer
		for _, c := range []struct {
			engine int
			salt   string
		}{{0, "p1"}, {0, "p2"}, {3, "p3"}, {3, "p4"}} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestEngineChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %s %s", engineChildEnv, c.engine, root, c.salt))
			out := &bytes.Buffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds, outs = append(cmds, cmd), append(outs, out)
		}
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Errorf("engine process %d on %s: %v\n%s", i, root, err, outs[i])
			}
		}
	}
	run(plain)
	run(mnt)
	sameTree(t, "four engine processes: mount vs plain directory", engineTree(t, mnt), engineTree(t, plain))
}
