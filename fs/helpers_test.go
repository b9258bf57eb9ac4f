package fs

import (
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	ucmmetrics "github.com/ucmfs/ucmfs/metrics"
	"github.com/ucmfs/ucmfs/store"
	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// testLogger discards logs unless UCMFS_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("UCMFS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testModel is the model most tests write into.
const testModel = "meta-llama--Llama-3.1-8B"

// newTestStack builds a stack of a 64 MiB memory tier over one nvme
// directory tier in a temporary directory.
func newTestStack(t testing.TB) *tiers.Stack {
	t.Helper()
	return newTestStackWith(t, tiers.MemConfig{Capacity: 64 << 20}, tiers.DirConfig{Kind: "nvme"})
}

// newTestStackWith builds a stack of one memory tier and one directory
// tier from the given configurations (Logger and an empty Dir filled in),
// closed when the test ends.
func newTestStackWith(t testing.TB, mc tiers.MemConfig, dc tiers.DirConfig) *tiers.Stack {
	t.Helper()
	return tiertest.NewStack(t, testLogger(), mc, dc)
}

// testBlock builds a valid block of payload bytes whose id is derived from
// (model, n).
func testBlock(model string, n, payload int) (format.Key, []byte) {
	id := format.ID(md5.Sum([]byte(fmt.Sprintf("%s/%d", model, n))))
	data := make([]byte, payload)
	r := rand.New(rand.NewPCG(uint64(n), 11))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	h := format.BlockHeader{ID: id, NumLayers: 2, BlockSize: 4, Dtype: format.BFloat16, TensorsPerLayer: 0}
	return format.Key{Model: model, ID: id}, format.NewBlock(h, data)
}

// testRepr builds a valid mean-pooled sidecar of key's block.
func testRepr(key format.Key) (format.Key, []byte) {
	h := format.ReprHeader{ID: key.ID, Kind: format.ReprMean, Dtype: format.BFloat16, NumLayers: 2, NumKVHeads: 1, Rows: 1, Dim: 8}
	return format.Key{Model: key.Model, ID: key.ID, Kind: format.Repr}, format.NewRepr(h, make([]byte, 2*1*1*8*2))
}

// put publishes data as key straight through the stack.
func put(t testing.TB, st *tiers.Stack, key format.Key, data []byte) {
	t.Helper()
	if _, err := st.Put(key, data, false); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// fuseUsable reports whether this process can mount FUSE file systems.
func fuseUsable() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// mounted lists the mount points this test binary made, for TestMain.
var mounted struct {
	sync.Mutex
	dirs []string
}

// testMount is one in-process mount of a real stack.
type testMount struct {
	mnt     string
	st      *tiers.Stack
	srv     *Server
	metrics *ucmmetrics.Metrics
}

// noFilesWritten waits until the mount has no file being written and no
// staging file (its .ucm/stats, as a client reads them), bounded: the
// kernel sends a descriptor's RELEASE after close returns. It returns
// the last stats read and whether that came.
func (m *testMount) noFilesWritten() (string, bool) {
	var st []byte
	for range 1000 {
		st, _ = os.ReadFile(m.path(".ucm", "stats"))
		flat := strings.ReplaceAll(string(st), " ", "")
		if strings.Contains(flat, `"writing_files":0`) && strings.Contains(flat, `"staging_files":0`) {
			return string(st), true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return string(st), false
}

// path is a path under the mount.
func (m *testMount) path(parts ...string) string {
	return filepath.Join(append([]string{m.mnt}, parts...)...)
}

// model makes the model directory name with the layout given (by its
// user.ucm.layout) and returns its path.
func (m *testMount) model(t testing.TB, name, layout string) string {
	t.Helper()
	p := m.path(name)
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(p, "user.ucm.layout", []byte(layout), 0); err != nil {
		t.Fatal(err)
	}
	return p
}

// keyPath is the path of key under the mount.
func (m *testMount) keyPath(k format.Key) string { return m.path(k.Path()) }

// newMount mounts a new stack on a temporary directory; the mount goes at
// the end of the test. Without /dev/fuse the test is skipped, unless
// UCMFS_REQUIRE_FUSE=1.
func newMount(t testing.TB, opts Options, sopts ...store.Options) *testMount {
	t.Helper()
	requireFUSE(t)
	return newMountWith(t, newTestStack(t), opts, sopts...)
}

// requireFUSE skips the test when FUSE is unusable, unless
// UCMFS_REQUIRE_FUSE=1 makes that a failure.
func requireFUSE(t testing.TB) {
	t.Helper()
	if err := fuseUsable(); err != nil {
		if os.Getenv("UCMFS_REQUIRE_FUSE") == "1" {
			t.Fatalf("FUSE required but unusable: %v", err)
		}
		t.Skipf("FUSE unusable: %v", err)
	}
}

// newMountWith mounts st (see newMount).
func newMountWith(t testing.TB, st *tiers.Stack, opts Options, sopts ...store.Options) *testMount {
	t.Helper()
	requireFUSE(t)
	return mountAt(t, t.TempDir(), st, opts, sopts...)
}

// mountAt mounts st (in a store made with sopts, at most one) on mnt,
// records the mount for TestMain's leak check and unmounts it when the
// test ends.
func mountAt(t testing.TB, mnt string, st *tiers.Stack, opts Options, sopts ...store.Options) *testMount {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	core := testStore(t, st, sopts...)
	exported := ucmmetrics.New(core)
	srv, err := Mount(mnt, core, opts)
	if err != nil {
		t.Fatal(err)
	}
	mounted.Lock()
	mounted.dirs = append(mounted.dirs, srv.Mountpoint())
	mounted.Unlock()
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return &testMount{mnt: mnt, st: st, srv: srv, metrics: exported}
}

// modes runs fn once with passthrough requested (active where the kernel
// and privileges allow) and once without.
func modes(t *testing.T, fn func(t *testing.T, m *testMount)) {
	for _, pt := range []bool{true, false} {
		t.Run(fmt.Sprintf("passthrough=%v", pt), func(t *testing.T) {
			// UCMFS_FUSE_DEBUG=1 (with UCMFS_TEST_LOG=1) traces the requests.
			m := newMount(t, Options{Passthrough: pt, Debug: os.Getenv("UCMFS_FUSE_DEBUG") != ""})
			fn(t, m)
		})
	}
}

// writeFile creates path with O_CREAT|O_WRONLY|O_EXCL, writes data and
// returns close's error.
func writeFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// errnoOf extracts the errno of err: 0 for nil, EIO-like -1 when err
// carries none.
func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return ^unix.Errno(0)
}

// testStore makes the store over st with the test logger, and the options
// of sopts (at most one); it is closed when the test ends.
func testStore(t testing.TB, st *tiers.Stack, sopts ...store.Options) *store.Store {
	t.Helper()
	var so store.Options
	if len(sopts) > 0 {
		so = sopts[0]
	}
	if so.Logger == nil {
		so.Logger = testLogger()
	}
	core, err := store.New(st, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(core.Close)
	return core
}

// testState is the state nodes share, over st, without a mount.
func testState(t testing.TB, st *tiers.Stack, opts Options) *fsState {
	t.Helper()
	return newState(testStore(t, st, store.Options{Logger: opts.Logger}), opts)
}

func isDirty(st *tiers.Stack, k format.Key) bool { bi, _ := st.Stat(k); return bi.Dirty }

func onDisk(st *tiers.Stack, k format.Key) (store.BlockInfo, error) {
	bi, err := st.Stat(k)
	if err == nil && !slices.Contains(bi.Holders, "nvme") {
		err = store.ErrNotFound
	}
	return bi, err
}

func memRoom(st *tiers.Stack) int64 { u := st.Tiers()[tiers.Memory].Usage; return u.Capacity - u.Used }
