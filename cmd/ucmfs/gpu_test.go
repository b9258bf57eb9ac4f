package main

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/ucmfs/ucmfs/gpu"
)

// TestGPUSetting: --gpu and the gpu key choose the device (auto by
// default, the flag over the file); other values are usage errors.
func TestGPUSetting(t *testing.T) {
	if cfg, code, msg := parseMount(t, "--memory-only", "/m"); code != exitOK || cfg.GPU != "auto" {
		t.Errorf("default: exit %d (%s), gpu %q", code, msg, cfg.GPU)
	}
	conf := writeTemp(t, t.TempDir(), "c.yaml", "gpu: off\n")
	if cfg, code, msg := parseMount(t, "--config", conf, "--memory-only", "/m"); code != exitOK || cfg.GPU != "off" {
		t.Errorf("from the file: exit %d (%s), gpu %q", code, msg, cfg.GPU)
	}
	if cfg, code, msg := parseMount(t, "--config", conf, "--gpu", "sim", "--memory-only", "/m"); code != exitOK || cfg.GPU != "sim" {
		t.Errorf("flag over the file: exit %d (%s), gpu %q", code, msg, cfg.GPU)
	}
	if _, code, msg := parseMount(t, "--gpu", "tpu", "--memory-only", "/m"); code != exitUsage || msg == "" {
		t.Errorf("--gpu tpu: exit %d (%q), want %d", code, msg, exitUsage)
	}
}

// TestOpenGPU: off gives no device, sim the simulated one, and cuda
// fails without a driver (where there is one, it opens it).
func TestOpenGPU(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if dev, err := openGPU("off", "", log); dev != nil || err != nil {
		t.Errorf("off: %v, %v", dev, err)
	}
	dev, err := openGPU("sim", "", log)
	if err != nil || dev.Name() != "sim" {
		t.Fatalf("sim: %v", err)
	}
	closeGPU(dev, log)
	dev, err = openGPU("cuda", "", log)
	switch {
	case errors.Is(err, gpu.ErrNoDevice):
		t.Logf("cuda without a driver: %v", err)
	case err != nil:
		t.Errorf("cuda: %v, want an error wrapping gpu.ErrNoDevice", err)
	default:
		closeGPU(dev, log)
	}
	closeGPU(nil, log)
}

// TestSocketDirOwned: the GPU socket's directory is taken only when it is
// the daemon's own and no one else may write it: a directory another user
// made first (or opened to all, or a link) is refused.
func TestSocketDirOwned(t *testing.T) {
	base := t.TempDir()
	mine := filepath.Join(base, "mine")
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := ownDir(mine, os.Geteuid()); err != nil {
		t.Errorf("the daemon's own directory: %v", err)
	}
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	if err := ownDir(open, os.Geteuid()); err == nil {
		t.Error("a directory all may write was taken")
	}
	if err := ownDir(mine, os.Geteuid()+1); err == nil {
		t.Error("another user's directory was taken")
	}
	link := filepath.Join(base, "link")
	os.Symlink(mine, link)
	if err := ownDir(link, os.Geteuid()); err == nil {
		t.Error("a link was taken")
	}
}

// TestCleanStaleSockets: a socket no daemon listens on any more (its
// daemon was killed) is removed at the next mount; a live one stays.
func TestCleanStaleSockets(t *testing.T) {
	dir := t.TempDir()
	stale, live := filepath.Join(dir, "stale.sock"), filepath.Join(dir, "live.sock")
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: stale, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // the file stays, nobody listens: what SIGKILL leaves
	l2, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: live, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	go func() {
		for {
			c, err := l2.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	cleanStaleSockets(dir, slog.New(slog.DiscardHandler))
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale socket is still there: %v", err)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("the live socket went: %v", err)
	}
}
