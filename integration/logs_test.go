package integration

import (
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLogsRateLimited: 3,000 refused creates of one kind log a handful
// of lines and one summary with the count, not 3,000 lines; no line is
// longer than the bound.
func TestLogsRateLimited(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	os.Mkdir(d.path("m"), 0o755)
	os.Mkdir(d.path("m", "00"), 0o755)
	for i := 0; i < 3000; i++ {
		if f, err := os.Create(d.path("m", "00", "not-an-id.bin")); err == nil {
			f.Close()
			t.Fatal("a bad name was created")
		}
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	out := d.out.String()
	refused := strings.Count(out, "request refused")
	if refused > 10 {
		t.Errorf("%d 'request refused' lines for 3,000 refusals", refused)
	}
	if !strings.Contains(out, "more in the last") || !strings.Contains(out, "dropped=") {
		t.Errorf("no summary with the count:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 4096 {
			t.Errorf("a log line of %d bytes", len(line))
		}
	}
}

// TestFlushAcrossInterrupts: a Go client's thread gets SIGURG (the
// runtime's preemption signal) many times while its flush request runs;
// the kernel turns each into FUSE_INTERRUPT; every flush still answers
// "ok flushed", never "err EINTR".
func TestFlushAcrossInterrupts(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	os.Mkdir(d.path("m"), 0o755)
	for round := 0; round < 20; round++ {
		for _, id := range testIDs("eintr-"+string(rune('a'+round)), 100) {
			if err := writeVerdict(blockPath(d.Mnt, "m", id), goodBlock(id)); err != nil {
				if os.IsNotExist(err) {
					os.Mkdir(d.path("m", id[:2]), 0o755)
					err = writeVerdict(blockPath(d.Mnt, "m", id), goodBlock(id))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		answer, signals := flushUnderSignals(t, d)
		if answer != "ok flushed\n" {
			t.Fatalf("round %d, %d signals: flush answered %q", round, signals, answer)
		}
	}
}

// flushUnderSignals writes "all" to .ucm/flush from a locked OS thread
// that another goroutine keeps sending SIGURG, and returns the answer.
func flushUnderSignals(t *testing.T, d *daemon) (string, int64) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := os.OpenFile(d.path(".ucm", "flush"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tid := unix.Gettid()
	stop := make(chan struct{})
	var sent atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
			sent.Add(1)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	_, werr := f.Write([]byte("all\n"))
	close(stop)
	if werr != nil {
		t.Fatalf("write flush: %v", werr)
	}
	buf := make([]byte, 4096)
	n, _ := f.Read(buf)
	return string(buf[:n]), sent.Load()
}
