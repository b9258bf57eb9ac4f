package integration

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSystemdNotify starts the real binary as a Type=notify unit would:
// NOTIFY_SOCKET names a unixgram socket this test reads and WATCHDOG_USEC
// asks for a watchdog. The daemon must say READY=1 once the mount
// answers, ping WATCHDOG=1 while it runs, and STOPPING=1 at SIGTERM, then
// exit 0.
func TestSystemdNotify(t *testing.T) {
	requireFUSE(t)
	sock := filepath.Join(testDir(t), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	d := startUCM(t, mountOpts{Env: []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=200000"}})
	next := func(what string) string {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case <-time.After(readyWait):
			t.Fatalf("no %s notification in %v\n%s", what, readyWait, d.out.String())
			return ""
		}
	}
	if m := next("READY=1"); m != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", m)
	}
	if !isMounted(d.Mnt) {
		t.Fatal("READY=1 before the mount is there")
	}
	for i := range 3 { // 100 ms apart: half the watchdog interval
		if m := next("WATCHDOG=1"); m != "WATCHDOG=1" {
			t.Fatalf("notification %d after READY: %q, want WATCHDOG=1", i, m)
		}
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s", code, d.out.String())
	}
	// The reader goroutine may not have taken STOPPING=1 off the socket
	// yet when the daemon has exited: wait for it (bounded), then for
	// anything after it.
	var rest []string
	for wait := readyWait; ; wait = 100 * time.Millisecond {
		var m string
		select {
		case m = <-msgs:
		case <-time.After(wait):
		}
		if m == "" {
			break
		}
		rest = append(rest, m)
	}
	if len(rest) == 0 || rest[len(rest)-1] != "STOPPING=1" || strings.Count(strings.Join(rest, " "), "STOPPING=1") != 1 {
		t.Errorf("notifications after SIGTERM: %q, want WATCHDOG=1 pings then one STOPPING=1", rest)
	}
}
