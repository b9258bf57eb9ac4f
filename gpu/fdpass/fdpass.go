// Package fdpass passes file descriptors between processes over a Unix
// socket (SOCK_SEQPACKET, SCM_RIGHTS): the transport of the VMM form of
// GPU registration, where an engine hands the daemon the POSIX fd that
// cuMemExportToShareableHandle gave it. One Send is one message (a short
// request line) with at most MaxFiles descriptors; message boundaries
// are kept, so no framing is needed. The receiver learns the sender's
// uid and pid from the kernel (SO_PEERCRED), to check it against the
// caller of the matching control request.
//
// The package knows nothing of what the messages mean; docs/gpu.md says
// how the mount uses it.
package fdpass

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// MaxFiles is the most descriptors one message carries.
const MaxFiles = 4

// MaxMessage is the largest message Recv takes whole.
const MaxMessage = 4096

// ErrTruncated: a message, or its descriptors, did not fit; the
// descriptors that did arrive were closed.
var ErrTruncated = errors.New("fdpass: message truncated")

// Listener accepts connections on a socket file.
type Listener struct {
	l    *net.UnixListener
	path string
}

// Listen creates the socket file at path with mode perm (a stale socket
// left by a dead daemon is replaced; any other file is refused).
func Listen(path string, perm os.FileMode) (*Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("fdpass: %s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("fdpass: remove stale socket: %w", err)
		}
	}
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("fdpass: listen: %w", err)
	}
	l.SetUnlinkOnClose(true)
	if err := os.Chmod(path, perm); err != nil {
		l.Close()
		return nil, fmt.Errorf("fdpass: %w", err)
	}
	return &Listener{l: l, path: path}, nil
}

// Path is the socket file.
func (l *Listener) Path() string { return l.path }

// Accept waits for the next connection.
func (l *Listener) Accept() (*Conn, error) {
	c, err := l.l.AcceptUnix()
	if err != nil {
		return nil, err
	}
	return &Conn{c: c}, nil
}

// Close stops listening and removes the socket file; Accept then fails
// with net.ErrClosed.
func (l *Listener) Close() error { return l.l.Close() }

// Conn is one connection.
type Conn struct{ c *net.UnixConn }

// Dial connects to the socket at path.
func Dial(path string) (*Conn, error) {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("fdpass: dial: %w", err)
	}
	return &Conn{c: c}, nil
}

// Send sends msg with files' descriptors (the caller keeps its own
// copies open or closes them; the receiver gets duplicates).
func (c *Conn) Send(msg []byte, files ...*os.File) error {
	if len(files) > MaxFiles || len(msg) > MaxMessage || len(msg) == 0 {
		return fmt.Errorf("fdpass: send %d bytes with %d files (want 1 to %d bytes, at most %d files)",
			len(msg), len(files), MaxMessage, MaxFiles)
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	_, _, err := c.c.WriteMsgUnix(msg, oob, nil)
	runtime.KeepAlive(files) // open until the kernel has duplicated them
	if err != nil {
		return fmt.Errorf("fdpass: send: %w", err)
	}
	return nil
}

// Recv receives one message into buf (MaxMessage bytes hold any) and
// the descriptors it carries, as files named "fdpass". When the peer has
// closed the connection it fails with an error wrapping
// syscall.ECONNRESET.
func (c *Conn) Recv(buf []byte) (int, []*os.File, error) {
	oob := make([]byte, unix.CmsgSpace(MaxFiles*4))
	n, oobn, flags, _, err := c.c.ReadMsgUnix(buf, oob)
	if err != nil {
		return 0, nil, err
	}
	files, perr := parseRights(oob[:oobn])
	if perr == nil && (flags&unix.MSG_TRUNC != 0 || flags&unix.MSG_CTRUNC != 0) {
		perr = ErrTruncated
	}
	if perr != nil {
		for _, f := range files {
			f.Close()
		}
		return 0, nil, perr
	}
	if n == 0 && len(files) == 0 {
		return 0, nil, fmt.Errorf("fdpass: peer closed: %w", syscall.ECONNRESET)
	}
	return n, files, nil
}

// parseRights turns the SCM_RIGHTS messages in oob into files.
func parseRights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("fdpass: control message: %w", err)
	}
	var files []*os.File
	var first error
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("fdpass: control message: %w", err)
			}
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "fdpass"))
		}
	}
	return files, first
}

// Peer returns the uid and pid of the process at the other end, as the
// kernel recorded them when it connected.
func (c *Conn) Peer() (uid, pid int, err error) {
	raw, err := c.c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var cerr error
	err = raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("fdpass: peer credentials: %w", err)
	}
	return int(cred.Uid), int(cred.Pid), nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }
