package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/vmihailenco/msgpack/v5"
	"golang.org/x/sys/unix"
)

// zmtpGreeting is a ZMTP 3.0 greeting of the NULL mechanism.
func zmtpGreeting() []byte {
	g := make([]byte, 64)
	g[0], g[9], g[10] = 0xff, 0x7f, 3
	copy(g[12:], "NULL")
	return g
}

// sendAndDrain dials addr, writes b, ends its side and reads until the
// daemon closes the connection.
func sendAndDrain(t *testing.T, addr string, b []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(b)
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c)
}

// checkMountServes creates, writes and reads back a file on d's mount.
func checkMountServes(t *testing.T, d *daemon) {
	t.Helper()
	id := fmt.Sprintf("%032x", 0xabc)
	writeBlocks(t, d, "served", []string{id})
	if _, err := os.ReadFile(blockPath(d.Mnt, "served", id)); err != nil {
		t.Fatalf("the mount does not serve a user: %v", err)
	}
}

// TestKVEventsCrashAttempts: a peer that announces a frame of 2^50 bytes
// after a ZMTP greeting, on the PUB port and on the replay port, loses
// its connection; the daemon stays up and its mount serves users (the
// daemon used to die of "makeslice: len out of range", the mount
// answering ENOTCONN).
func TestKVEventsCrashAttempts(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--kv-events", "tcp://127.0.0.1:0", "--kv-events-models", "*"}})
	pub, replay := kvPorts(t, d)
	long := binary.BigEndian.AppendUint64([]byte{0x06}, 1<<50) // a long command frame
	for _, port := range []int{pub, replay} {
		sendAndDrain(t, "127.0.0.1:"+strconv.Itoa(port), append(zmtpGreeting(), long...))
	}
	checkMountServes(t, d)
	if !d.alive() {
		t.Fatalf("the daemon died:\n%s", d.out.String())
	}
}

// replayHashes asks the replay port for every batch with a DEALER and
// returns the hashes of the BlockStored events.
func replayHashes(t *testing.T, port int) map[uint64]bool {
	t.Helper()
	dl := zmq4.NewDealer(context.Background())
	defer dl.Close()
	if err := dl.Dial("tcp://127.0.0.1:" + strconv.Itoa(port)); err != nil {
		t.Fatal(err)
	}
	if err := dl.Send(zmq4.NewMsgFrom(nil, make([]byte, 8))); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]bool{}
	for {
		m, err := dl.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Frames) != 3 || len(m.Frames[2]) == 0 {
			return got // the end marker
		}
		var batch []any
		if err := msgpack.Unmarshal(m.Frames[2], &batch); err != nil {
			t.Fatal(err)
		}
		for _, ev := range batch[1].([]any) {
			if ev := ev.([]any); ev[0] == "BlockStored" {
				for _, h := range ev[1].([]any) { // msgpack's smallest int
					n, _ := strconv.ParseUint(fmt.Sprint(h), 10, 64)
					got[n] = true
				}
			}
		}
	}
}

// TestKVEventsRoutableModels: over tcp, only the models
// --kv-events-models names are published: the blocks of another user's
// 0700 model never reach a replay (they did, to any local user).
func TestKVEventsRoutableModels(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--kv-events", "tcp://127.0.0.1:0", "--kv-events-models", "shared"}})
	_, replay := kvPorts(t, d)
	if err := os.Mkdir(d.path("private"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d.path("private"), 1000, 1000); err != nil {
		t.Fatal(err)
	}
	secret, open := kvIDs("5", 1)[0], kvIDs("6", 1)[0]
	writeBlocks(t, d, "private", []string{secret})
	writeBlocks(t, d, "shared", []string{open})
	flushAll(t, d)
	// The publisher batches what comes in a few milliseconds: a replay
	// that does not hold the shared block yet is asked again.
	for got := replayHashes(t, replay); !got[idHash(open)]; got = replayHashes(t, replay) {
		if got[idHash(secret)] {
			t.Fatalf("a replay handed out the hash of a block of a 0700 model not marked routable")
		}
	}
	if replayHashes(t, replay)[idHash(secret)] {
		t.Errorf("a replay handed out the hash of a block of a 0700 model not marked routable")
	}
}

// TestKVEventsIPCMode: an ipc endpoint's socket is the daemon's user's
// alone (0600): another user cannot connect.
func TestKVEventsIPCMode(t *testing.T) {
	py := "/usr/bin/python3"                   // Debian's, which every user may run
	dir, err := os.MkdirTemp("", "ucmfs-ipc-") // a path every user can walk
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	sock := filepath.Join(dir, "kv.sock")
	mountUCM(t, mountOpts{Args: []string{"--kv-events", "ipc://" + sock, "--kv-events-replay", "none"}})
	var st unix.Stat_t
	if err := unix.Stat(sock, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o777 != 0o600 || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		t.Errorf("the socket's mode is %o, want a socket of 0600", st.Mode)
	}
	cmd := exec.Command(py, "-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])", sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("another user connected to the ipc socket")
	} else if !regexpMatch(`Permission denied`, string(out)) {
		t.Errorf("another user's connect failed otherwise: %v: %s", err, out)
	}
}

// daemonFDs is how many descriptors d's process holds.
func daemonFDs(t *testing.T, d *daemon) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", d.pid()))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestMetricsIdleConnections: connections to the metrics port that each
// send GET /healthz and stay open (UCMFS_IDLE_CONNS of them, 2,000 by
// default) hold no more than the port's cap of the daemon's
// descriptors; the mount serves users and /healthz answers beside them
// (20,000 such connections took every descriptor of a daemon, its users'
// opens failing with EMFILE).
func TestMetricsIdleConnections(t *testing.T) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("UCMFS_IDLE_CONNS")); err == nil {
		n = v
	}
	d := mountUCM(t, mountOpts{Args: []string{"--metrics-addr", "127.0.0.1:0"}})
	var rl unix.Rlimit // the connections are this process's descriptors too
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < uint64(n+500) {
		rl.Cur, rl.Max = uint64(n+500), max(rl.Max, uint64(n+500))
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
			t.Skipf("raising the descriptor limit to %d: %v", rl.Cur, err)
		}
	}
	addr := regexpFind(t, `metrics on http://([^/\s"]+)/`, d.out.String())
	before := daemonFDs(t, d)
	answered, most := 0, 0
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: ucmfs\r\n\r\n")
		buf := make([]byte, 512)
		if k, _ := c.Read(buf); k > 0 {
			answered++
		}
		if i%100 == 99 {
			most = max(most, daemonFDs(t, d)-before)
		}
	}
	held := daemonFDs(t, d) - before
	t.Logf("%d connections sent GET /healthz and stayed open: %d answered; the daemon held %d descriptors more than before them (%d at most, sampled every 100)",
		n, answered, held, max(most, held))
	if held > 64+8 || most > 64+8 {
		t.Errorf("the daemon holds %d descriptors more (%d at most) for %d idle connections; the metrics port's cap is 64", held, most, n)
	}
	checkMountServes(t, d)
	if code, body := httpGet(t, "http://"+addr+"/healthz"); code != 200 {
		t.Errorf("/healthz beside the idle connections: %d %q", code, body)
	}
}

// regexpFind is the first group of re's first match in s.
func regexpFind(t *testing.T, re, s string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, s)
	}
	return m[1]
}
