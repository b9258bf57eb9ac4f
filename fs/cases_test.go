package fs

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/pkg/xattr"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/fs/pending"
	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// caseEnv is what a case of the shared table works on: a stack holding
// one published block (key), and either the mount's state without a
// kernel (node depth) or a mount (kernel depth).
type caseEnv struct {
	st   *tiers.Stack
	s    *fsState   // node depth: the state nodes are built on
	m    *testMount // kernel depth
	key  format.Key
	data []byte
	n    int // the case's number, for fresh keys
}

// fresh is a block no other case writes.
func (e *caseEnv) fresh() (format.Key, []byte) { return testBlock(testModel, 1000+e.n, 64) }

func (e *caseEnv) shard(k format.Key) *shardNode { return newShardNode(e.s, k.Model, k.ID[0], 0) }
func (e *caseEnv) block() *blockFile             { return newStoredNode(e.s, e.key, 0).(*blockFile) }
func (e *caseEnv) model() *modelNode             { return newModelNode(e.s, testModel, 0) }
func (e *caseEnv) p(k format.Key) string         { return e.m.keyPath(k) }

// nodeWrite writes data through a write handle without a kernel and
// returns the close verdict.
func (e *caseEnv) nodeWrite(k format.Key, data []byte) syscall.Errno {
	_, h, errno := e.s.beginWrite(callerProc(context.Background()), k, k.FileName(), false, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_EXCL)
	if errno != 0 {
		return errno
	}
	defer h.Release(context.Background())
	if errno := writeAll(h, data); errno != 0 {
		return errno
	}
	return h.Flush(context.Background())
}

func writeAll(h *pending.Handle, data []byte) syscall.Errno {
	_, errno := h.Write(context.Background(), data, 0)
	return errno
}

var bg = context.Background()

// errCases is the one table of refusals and verdicts, run at node depth
// (methods called directly) and at kernel depth (syscalls on a mount, with
// and without passthrough).
var errCases = []struct {
	name   string
	want   syscall.Errno
	node   func(e *caseEnv) syscall.Errno
	kernel func(e *caseEnv) error
}{
	{"create bad name", syscall.EINVAL,
		func(e *caseEnv) syscall.Errno {
			_, _, _, x := e.shard(e.key).Create(bg, "nothex.bin", 1, 0o644, &fuse.EntryOut{})
			return x
		},
		func(e *caseEnv) error { return writeFile(e.m.path(testModel, e.key.ID.Shard(), "nothex.bin"), nil) }},
	{"create in the wrong shard", syscall.EINVAL,
		func(e *caseEnv) syscall.Errno {
			_, _, _, x := newShardNode(e.s, testModel, e.key.ID[0]+1, 0).Create(bg, e.key.FileName(), 1, 0o644, &fuse.EntryOut{})
			return x
		},
		func(e *caseEnv) error {
			return writeFile(e.m.path(testModel, format.ShardName(e.key.ID[0]+1), e.key.FileName()), nil)
		}},
	{"create published, O_EXCL", syscall.EEXIST,
		func(e *caseEnv) syscall.Errno {
			_, _, x := e.s.beginWrite(callerProc(bg), e.key, e.key.FileName(), false, syscall.O_WRONLY|syscall.O_EXCL)
			return x
		},
		func(e *caseEnv) error { return writeFile(e.p(e.key), e.data) }},
	{"create published, no O_EXCL", syscall.EACCES,
		func(e *caseEnv) syscall.Errno {
			_, _, x := e.s.beginWrite(callerProc(bg), e.key, e.key.FileName(), false, syscall.O_WRONLY)
			return x
		},
		func(e *caseEnv) error { _, err := os.OpenFile(e.p(e.key), os.O_CREATE|os.O_WRONLY, 0o644); return err }},
	{"open published for writing", syscall.EACCES,
		func(e *caseEnv) syscall.Errno { _, _, x := e.block().Open(bg, syscall.O_WRONLY); return x },
		func(e *caseEnv) error { _, err := os.OpenFile(e.p(e.key), os.O_WRONLY, 0); return err }},
	{"open published O_RDWR", syscall.EACCES,
		func(e *caseEnv) syscall.Errno { _, _, x := e.block().Open(bg, syscall.O_RDWR); return x },
		func(e *caseEnv) error { _, err := os.OpenFile(e.p(e.key), os.O_RDWR, 0); return err }},
	{"truncate published", syscall.EPERM,
		func(e *caseEnv) syscall.Errno {
			in := &fuse.SetAttrIn{}
			in.Valid, in.Size = fuse.FATTR_SIZE, 10
			return e.block().Setattr(bg, nil, in, &fuse.AttrOut{})
		},
		func(e *caseEnv) error { return os.Truncate(e.p(e.key), 10) }},
	{"chmod published setuid", syscall.EPERM,
		func(e *caseEnv) syscall.Errno {
			in := &fuse.SetAttrIn{}
			in.Valid, in.Mode = fuse.FATTR_MODE, 0o4644
			return e.block().Setattr(bg, nil, in, &fuse.AttrOut{})
		},
		func(e *caseEnv) error { return unix.Chmod(e.p(e.key), 0o4644) }},
	{"rename", syscall.EPERM,
		func(e *caseEnv) syscall.Errno { return e.shard(e.key).Rename(bg, e.key.FileName(), nil, "x", 0) },
		func(e *caseEnv) error {
			k2, _ := e.fresh()
			return os.Rename(e.p(e.key), e.m.path(testModel, e.key.ID.Shard(), k2.FileName()))
		}},
	{"link", syscall.EPERM,
		func(e *caseEnv) syscall.Errno { _, x := e.shard(e.key).Link(bg, nil, "x", nil); return x },
		func(e *caseEnv) error { return os.Link(e.p(e.key), e.m.path(testModel, e.key.ID.Shard(), "x.bin")) }},
	{"symlink", syscall.EPERM,
		func(e *caseEnv) syscall.Errno { _, x := e.shard(e.key).Symlink(bg, "t", "x", nil); return x },
		func(e *caseEnv) error { return os.Symlink("t", e.m.path(testModel, e.key.ID.Shard(), "x")) }},
	{"mknod", syscall.EPERM,
		func(e *caseEnv) syscall.Errno {
			_, x := e.shard(e.key).Mknod(bg, "x", syscall.S_IFIFO, 0, nil)
			return x
		},
		func(e *caseEnv) error { return unix.Mkfifo(e.m.path(testModel, e.key.ID.Shard(), "x"), 0o644) }},
	{"mkdir bad model name", syscall.EINVAL,
		func(e *caseEnv) syscall.Errno {
			_, x := newRoot(e.s).Mkdir(bg, "a b", 0o755, &fuse.EntryOut{})
			return x
		},
		func(e *caseEnv) error { return os.Mkdir(e.m.path("a b"), 0o755) }},
	{"mkdir inside a model", syscall.EPERM,
		func(e *caseEnv) syscall.Errno { _, x := e.model().Mkdir(bg, "x", 0o755, &fuse.EntryOut{}); return x },
		func(e *caseEnv) error { return os.Mkdir(e.m.path(testModel, "x"), 0o755) }},
	{"create in a model directory", syscall.EPERM,
		func(e *caseEnv) syscall.Errno {
			_, _, _, x := e.model().Create(bg, "x", 1, 0o644, &fuse.EntryOut{})
			return x
		},
		func(e *caseEnv) error { return writeFile(e.m.path(testModel, "x"), nil) }},
	{"lookup bad name", syscall.ENOENT,
		func(e *caseEnv) syscall.Errno { _, x := e.shard(e.key).Lookup(bg, "x.bin", &fuse.EntryOut{}); return x },
		func(e *caseEnv) error { _, err := os.Stat(e.m.path(testModel, e.key.ID.Shard(), "x.bin")); return err }},
	{"unlink absent", syscall.ENOENT,
		func(e *caseEnv) syscall.Errno { k, _ := e.fresh(); return e.shard(k).Unlink(bg, k.FileName()) },
		func(e *caseEnv) error { k, _ := e.fresh(); return os.Remove(e.p(k)) }},
	{"close invalid block", syscall.EINVAL,
		func(e *caseEnv) syscall.Errno { k, d := e.fresh(); d[8] ^= 1; return e.nodeWrite(k, d) },
		func(e *caseEnv) error { k, d := e.fresh(); d[8] ^= 1; return writeFile(e.p(k), d) }},
	{"close short file", syscall.EINVAL,
		func(e *caseEnv) syscall.Errno { k, d := e.fresh(); return e.nodeWrite(k, d[:10]) },
		func(e *caseEnv) error { k, d := e.fresh(); return writeFile(e.p(k), d[:10]) }},
	{"close sidecar without block", syscall.ENOENT,
		func(e *caseEnv) syscall.Errno { k, _ := e.fresh(); rk, d := testRepr(k); return e.nodeWrite(rk, d) },
		func(e *caseEnv) error { k, _ := e.fresh(); rk, d := testRepr(k); return writeFile(e.p(rk), d) }},
	{"getxattr unknown user.ucm name", syscall.ENODATA,
		func(e *caseEnv) syscall.Errno { _, x := e.block().Getxattr(bg, "user.ucm.nope", nil); return x },
		func(e *caseEnv) error { _, err := xattr.Get(e.p(e.key), "user.ucm.nope"); return err }},
	{"getxattr other namespace", syscall.ENOTSUP,
		func(e *caseEnv) syscall.Errno { _, x := e.block().Getxattr(bg, "user.other", nil); return x },
		func(e *caseEnv) error { _, err := xattr.Get(e.p(e.key), "user.other"); return err }},
	{"setxattr read-only", syscall.EPERM,
		func(e *caseEnv) syscall.Errno { return e.block().Setxattr(bg, "user.ucm.hash", []byte("x"), 0) },
		func(e *caseEnv) error { return xattr.Set(e.p(e.key), "user.ucm.hash", []byte("x")) }},
	{"setxattr pinned bad value", syscall.EINVAL,
		func(e *caseEnv) syscall.Errno { return e.block().Setxattr(bg, "user.ucm.pinned", []byte("yes"), 0) },
		func(e *caseEnv) error { return xattr.Set(e.p(e.key), "user.ucm.pinned", []byte("yes")) }},
	{"setxattr quota bad value", syscall.EINVAL,
		func(e *caseEnv) syscall.Errno { return e.model().Setxattr(bg, "user.ucm.quota", []byte("-5"), 0) },
		func(e *caseEnv) error { return xattr.Set(e.m.path(testModel), "user.ucm.quota", []byte("-5")) }},
	{"removexattr", syscall.EPERM,
		func(e *caseEnv) syscall.Errno { return e.block().Removexattr(bg, "user.ucm.pinned") },
		func(e *caseEnv) error { return xattr.Remove(e.p(e.key), "user.ucm.pinned") }},
}

// caseSetup publishes the block every case refers to.
func caseSetup(t *testing.T, st *tiers.Stack) (format.Key, []byte) {
	key, data := testBlock(testModel, 0, 4096)
	put(t, st, key, data)
	return key, data
}

// TestErrCasesNodes runs the table against the node methods, without a
// kernel.
func TestErrCasesNodes(t *testing.T) {
	st := newTestStack(t)
	key, data := caseSetup(t, st)
	s := testState(t, st, Options{Logger: testLogger()})
	for i, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			e := &caseEnv{st: st, s: s, key: key, data: data, n: i}
			if got := c.node(e); got != c.want {
				t.Fatalf("errno %v (%d), want %v (%d)", got, got, c.want, c.want)
			}
		})
	}
}

// TestErrCasesKernel runs the table through a mount.
func TestErrCasesKernel(t *testing.T) {
	modes(t, func(t *testing.T, m *testMount) {
		key, data := caseSetup(t, m.st)
		for i, c := range errCases {
			t.Run(c.name, func(t *testing.T) {
				e := &caseEnv{st: m.st, m: m, key: key, data: data, n: i}
				if got := errnoOf(c.kernel(e)); got != c.want {
					t.Fatalf("errno %v (%d), want %v (%d)", got, got, c.want, c.want)
				}
			})
		}
	})
}
