package fs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/fs/conn"
	"github.com/ucmfs/ucmfs/fs/uring"
)

// wantTransport is the transport a mount asking for ask gets on this
// machine. With UCMFS_REQUIRE_URING=1 (CI's second run of the suite, with
// the fuse module's enable_uring on) FUSE over io_uring must be there.
func wantTransport(t *testing.T, ask string) string {
	t.Helper()
	err := uring.Available()
	if os.Getenv("UCMFS_REQUIRE_URING") == "1" && err != nil {
		t.Fatalf("FUSE over io_uring required but unavailable: %v", err)
	}
	if ask == TransportDev || err != nil {
		return TransportDev
	}
	return TransportUring
}

// TestTransports: a mount serves blocks on the transport asked for and
// says which; asking for io_uring where the kernel does not offer it fails
// the mount with the reason, and auto falls back to /dev/fuse.
func TestTransports(t *testing.T) {
	requireFUSE(t)
	for _, ask := range Transports {
		t.Run(ask, func(t *testing.T) {
			want := wantTransport(t, ask)
			if ask == TransportUring && want != TransportUring {
				st := newTestStack(t)
				_, err := Mount(t.TempDir(), testStore(t, st), Options{Transport: ask, Logger: testLogger()})
				if err == nil || !strings.Contains(err.Error(), "io_uring") {
					t.Fatalf("mount asking for io_uring here: %v, want a refusal that says why", err)
				}
				return
			}
			m := newMount(t, Options{Transport: ask, Passthrough: true})
			if got := m.srv.Transport(); got != want {
				t.Fatalf("transport %s, want %s", got, want)
			}
			if want != TransportDev {
				// Backing files are registered on the connection's
				// descriptor, whichever transport carries the requests.
				dev := newMount(t, Options{Transport: TransportDev, Passthrough: true})
				if got, dv := m.srv.PassthroughActive(), dev.srv.PassthroughActive(); got != dv {
					t.Fatalf("passthrough active over %s: %v, over /dev/fuse: %v", want, got, dv)
				}
			}
			key, data := testBlock(testModel, 1, 3<<20)
			if err := os.MkdirAll(m.path(testModel), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := writeFile(m.keyPath(key), data); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(m.keyPath(key))
			if err != nil || string(got) != string(data) {
				t.Fatalf("read back: %d bytes, %v; want the %d written", len(got), err, len(data))
			}
			if _, err := os.Stat(m.path(testModel, key.ID.Shard(), "missing.bin")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("stat of a missing block: %v, want ENOENT", err)
			}
		})
	}
}

// stuckFile is a file whose read blocks until the kernel interrupts it.
type stuckFile struct {
	gofs.Inode
	entered     chan struct{}
	interrupted chan struct{}
}

var _ = (gofs.NodeOpener)((*stuckFile)(nil))
var _ = (gofs.NodeReader)((*stuckFile)(nil))

func (f *stuckFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (f *stuckFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	close(f.entered)
	<-ctx.Done()
	close(f.interrupted)
	return nil, syscall.EINTR
}

// TestTransportInterrupt: a signal to a process whose read waits in the
// daemon reaches the request as an interrupt (its context ends) on each
// transport: on io_uring the interrupt comes through /dev/fuse while the
// request is on the ring.
func TestTransportInterrupt(t *testing.T) {
	requireFUSE(t)
	for _, ask := range []string{TransportDev, TransportUring} {
		t.Run(ask, func(t *testing.T) {
			if wantTransport(t, ask) != ask {
				t.Logf("FUSE over io_uring unavailable here (TestTransports checks the refusal)")
				return
			}
			f := &stuckFile{entered: make(chan struct{}), interrupted: make(chan struct{})}
			root := &gofs.Inode{}
			raw := gofs.NewNodeFS(root, &gofs.Options{OnAdd: func(ctx context.Context) {
				root.AddChild("stuck", root.NewPersistentInode(ctx, f, gofs.StableAttr{Ino: 2}), false)
			}})
			mnt := t.TempDir()
			c, err := conn.Connect(mnt, raw, &fuse.MountOptions{DirectMount: true, MaxWrite: maxIO, FsName: "ucmfs-test",
				Name: "ucmfs-test", DisableSplice: true}, ask, testLogger(), new(atomic.Pointer[uring.Transport]))
			if err != nil {
				t.Fatal(err)
			}
			mounted.Lock()
			mounted.dirs = append(mounted.dirs, mnt)
			mounted.Unlock()
			defer func() {
				if err := c.Unmount(); err != nil {
					t.Errorf("unmount: %v", err)
				}
			}()
			// The handler raises, so that read(2)'s EINTR ends the read
			// instead of Python retrying it.
			child := exec.Command("python3", "-c", `import signal, sys
def stop(*a): raise SystemExit(3)
signal.signal(signal.SIGUSR1, stop)
open(sys.argv[1], "rb").read()`, mnt+"/stuck")
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			waitOrFail(t, f.entered, "the read to reach the daemon")
			if err := child.Process.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
			waitOrFail(t, f.interrupted, "the interrupt to reach the request")
			err = child.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 3 {
				t.Fatalf("reader: %v, want the exit of its signal handler (3)", err)
			}
		})
	}
}

// waitOrFail waits for ch; the bound is only there so that a broken
// transport fails the test instead of hanging it.
func waitOrFail(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
	}
}
