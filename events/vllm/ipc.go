package vllm

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// ipcMode is who may connect to an ipc socket: its file's mode and
// group (0: the daemon's).
type ipcMode struct {
	perm fs.FileMode // 0600 by default
	gid  int
}

// listenUnix listens on a unix socket at path that only mode lets
// connect from the first instant: the socket is made in a private
// directory (0700) beside path, given its mode and group, then renamed
// to path. A stale socket at path (no one listens) is replaced; a live
// one is EADDRINUSE, anything else at path an error. unlink removes it.
func listenUnix(path string, mode ipcMode) (ln net.Listener, unlink func(), err error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, nil, fmt.Errorf("kv events: %s exists and is no socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, nil, fmt.Errorf("kv events: %s: %w", path, syscall.EADDRINUSE)
		}
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".ucmfs-ipc-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	l, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, nil, err
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	perm := mode.perm
	if perm == 0 {
		perm = 0o600
	}
	err = os.Chmod(tmp, perm)
	if err == nil && mode.gid > 0 {
		err = os.Chown(tmp, -1, mode.gid)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		l.Close()
		return nil, nil, errors.Join(fmt.Errorf("kv events: %s", path), err)
	}
	return l, func() { os.Remove(path) }, nil
}
