package fdpass

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The child process of TestPassAcrossProcesses: the test binary run again
// with envChild naming the socket. It makes a memfd holding childData,
// sends it with a request line, waits for the answer and exits.
const envChild = "FDPASS_TEST_CHILD"

var childData = []byte("device memory, as the engine exported it")

func TestMain(m *testing.M) {
	if path := os.Getenv(envChild); path != "" {
		os.Exit(child(path))
	}
	os.Exit(m.Run())
}

func child(path string) int {
	fd, err := unix.MemfdCreate("engine", 0)
	if err == nil {
		_, err = unix.Write(fd, childData)
	}
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 2
	}
	f := os.NewFile(uintptr(fd), "memfd")
	c, err := Dial(path)
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 2
	}
	if err := c.Send([]byte("register vmm 4096"), f); err != nil {
		os.Stderr.WriteString(err.Error())
		return 2
	}
	f.Close() // the daemon holds its own copy now
	buf := make([]byte, MaxMessage)
	n, _, err := c.Recv(buf)
	if err != nil || string(buf[:n]) != "ok" {
		os.Stderr.WriteString("answer: " + string(buf[:n]))
		return 1
	}
	return 0
}

// TestPassAcrossProcesses: a file descriptor created in one process
// reaches another over the socket and reads the same bytes; the peer's
// credentials are the child's.
func TestPassAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gpu.sock")
	l, err := Listen(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envChild+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, MaxMessage)
	n, files, err := c.Recv(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "register vmm 4096" || len(files) != 1 {
		t.Fatalf("received %q with %d files", buf[:n], len(files))
	}
	uid, pid, err := c.Peer()
	if err != nil || uid != os.Getuid() || pid != cmd.Process.Pid {
		t.Errorf("Peer() = uid %d pid %d, %v; want %d, %d", uid, pid, err, os.Getuid(), cmd.Process.Pid)
	}
	got, err := io.ReadAll(io.NewSectionReader(files[0], 0, 1<<20))
	if err != nil || !bytes.Equal(got, childData) {
		t.Fatalf("the passed fd reads %q, %v", got, err)
	}
	files[0].Close()
	if err := c.Send([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v (%s)", err, stderr.String())
	}
	if _, _, err := c.Recv(buf); !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
		t.Errorf("Recv after the peer exited: %v, want ECONNRESET or EOF", err)
	}
}

// TestListenRules: a stale socket is replaced, another file is not; the
// socket gets the mode asked for and goes away on Close; bad sends fail.
func TestListenRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s")
	l, err := Listen(path, 0o660)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o660 {
		t.Errorf("socket mode: %v, %v", st.Mode(), err)
	}
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(nil); err == nil {
		t.Error("Send of an empty message succeeded")
	}
	if err := c.Send([]byte("x"), make([]*os.File, MaxFiles+1)...); err == nil {
		t.Error("Send of too many files succeeded")
	}
	c.Close()
	l.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after Close: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o600)
	if _, err := Listen(plain, 0o600); err == nil {
		t.Error("Listen over a regular file succeeded")
	}
	// A socket file left behind (no listener) is replaced.
	fd, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)
	unix.Bind(fd, &unix.SockaddrUnix{Name: path})
	unix.Close(fd)
	l2, err := Listen(path, 0o600)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l2.Close()
}
