package control

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/control/line"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/gpu"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
)

// The grammar of every control file is fuzzed kernel-free, as the session
// tests drive it: any bytes written to a session give only "ok ..." and
// "err <ERRNO> ..." lines, each bounded, and never a panic. Seed corpora
// are in testdata/fuzz/<FuzzName>/; `make fuzz` runs each target for a
// bounded time.

// fuzzEnv is an environment with blocks and a simulated GPU.
func fuzzEnv(f testing.TB) (*Env, []format.Key) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := tiertest.NewStack(f, log, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme"})
	keys := make([]format.Key, 4)
	for i := range keys {
		keys[i] = testKey(i)
		h := format.BlockHeader{ID: keys[i].ID, NumLayers: 2, BlockSize: 4, Dtype: format.BFloat16, NumKVHeads: 2, HeadDim: 4}
		if _, err := st.Put(keys[i], format.NewBlock(h, make([]byte, 2*2*4*2*4*2)), false); err != nil {
			f.Fatal(err)
		}
	}
	dev, err := gpu.Open(gpu.Config{Mode: "sim", Logger: log})
	if err != nil {
		f.Fatal(err)
	}
	core, err := store.New(st, store.Options{Logger: log})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { core.Close(); dev.Close() })
	return NewEnv(core, dev, nil, testErrName), keys
}

// fuzzFile fuzzes the grammar of one control file, seeded with seeds
// (testKey ids may be written as ID0..ID3, the model as MODEL).
func fuzzFile(f *testing.F, name string, seeds ...string) {
	e, keys := fuzzEnv(f)
	expand := func(s string) string {
		s = strings.ReplaceAll(s, "MODEL", testModel)
		for i, k := range keys {
			s = strings.ReplaceAll(s, "ID"+string(rune('0'+i)), k.ID.String())
		}
		return s
	}
	for _, s := range seeds {
		f.Add([]byte(expand(s)))
	}
	var file File
	for _, fl := range table {
		if fl.Name == name {
			file = fl
		}
	}
	// The caller is "nobody": a fuzzed register sim path is opened with its
	// credentials and must be its file, so no fuzzed load writes anywhere.
	caller := line.Caller{Uid: 65534, Gid: 65534, Pid: processAs(f, 65534, 65534)}
	creds, err := caller.Capture(true)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(creds.Close)
	f.Fuzz(func(t *testing.T, req []byte) {
		ctx := line.WithCreds(line.WithCaller(t.Context(), caller), creds)
		ss := file.Open(e)
		defer ss.Close()
		if _, err := ss.Write(ctx, req); err != nil {
			return // backpressure: a refusal of the write itself
		}
		ss.Write(ctx, []byte("\n"))
		out := readAnswers(t, ctx, ss)
		for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
			if len(out) == 0 {
				break
			}
			if !bytes.HasPrefix(line, []byte("ok")) && !bytes.HasPrefix(line, []byte("err ")) {
				t.Fatalf("answer %q to %q", line, req)
			}
			if bytes.HasPrefix(line, []byte("err ")) && len(line) > maxAnswer+100 {
				t.Fatalf("an err answer of %d bytes", len(line))
			}
		}
	})
}

func FuzzLookup(f *testing.F) {
	fuzzFile(f, "lookup", "exists MODEL ID0 ID1", "prefix MODEL ID0 ID1 ID2", "exists MODEL", "bogus", "prefix nomodel ID0",
		// A group that claims more ids than the line holds, and repeats.
		"hybrid 100 MODEL 16 100000 ID0", "hybrid 64 MODEL 16 3 ID0 ID0 ID0 MODEL 32 1 ID1", "exists MODEL ID0 ID0 ID0")
}

func FuzzPrefetch(f *testing.F) {
	fuzzFile(f, "prefetch", "MODEL ID0 ID1", "MODEL", "nomodel ID0", "MODEL zz", "MODEL ID0 ID0 ID0 ID1 ID0")
}

func FuzzFlush(f *testing.F) {
	fuzzFile(f, "flush", "all", "model MODEL", "model", "all extra", "model ../x", "files MODEL ID0 ID0 ID1 ID0")
}

func FuzzGPU(f *testing.F) {
	fuzzFile(f, "gpu", "register sim /dev/null 0", "load 1 MODEL ID0:0", "unregister 1", "dump 1 MODEL ID3:0:2048",
		"register cuda 00 10", "load 9 MODEL ID0:0 ID1:4096",
		// The same block many times, into one region (sized by the items).
		"register sim /dev/null 0\nload 1 MODEL ID0:0 ID0:0 ID0:0 ID0:0 ID0:0")
}

func FuzzTopk(f *testing.F) {
	fuzzFile(f, "topk", "MODEL 2 ID0 ID1 ID2 q=0,0,0,0", "MODEL 0", "MODEL 1 ID0", "bogus",
		// Repeated ids (ranked once), every layer of every row, sign-hash
		// codes: the shapes whose index is sized before it is built.
		"topk MODEL kind=mean layer=0 k=2 heads=1 dim=4 q=AACAPwAAAAAAAAAAAAAAAA== ID0 ID0 ID1 ID0",
		"topk MODEL kind=merged:1 layer=all k=1 heads=1 dim=4 q=AACAPwAAAAAAAAAAAAAAAA== ID0 ID0 ID0 ID0",
		"topk MODEL kind=signhash layer=all k=3 heads=1 dim=4 q=AACAPwAAAAAAAAAAAAAAAA== ID1 ID1 ID2",
		"topk MODEL kind=max layer=all k=1 heads=65536 dim=65536 q=AACAPwAAAAAAAAAAAAAAAA== ID0 ID0")
}
