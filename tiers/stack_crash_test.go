package tiers

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

const crashPayload = 256<<10 - 64

// crashChild writes blocks forever through a stack over dir, flushing
// every even one and printing "durable N" once its Flush has returned.
func crashChild(dir string) {
	s, err := New(StackConfig{Logger: testLogger()}, MemConfig{Capacity: 16 << 20}, DirConfig{Kind: "nvme", Dir: dir})
	if err != nil {
		fmt.Println("error", err)
		return
	}
	for i := 0; ; i++ {
		k, data := testBlock("crash", i, crashPayload)
		if _, err := s.Put(k, data, false); err != nil {
			fmt.Println("error", err)
			return
		}
		if i%2 == 0 {
			if err := s.Flush(context.Background(), k); err != nil {
				fmt.Println("error", err)
				return
			}
			fmt.Println("durable", i)
		}
	}
}

// TestStackKill9 kills a real writer process with SIGKILL while its stack
// writes back, then checks the directory: every block whose Flush returned
// is intact, and no file under a final name is partial or corrupt.
func TestStackKill9(t *testing.T) {
	for round := 0; round < 3; round++ {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "UCMFS_CRASH_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var durable []int
		sc := bufio.NewScanner(out)
		want := 20 + 15*round
		for len(durable) < want && sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == "durable" {
				n, _ := strconv.Atoi(f[1])
				durable = append(durable, n)
			} else {
				t.Fatalf("child: %s", sc.Text())
			}
		}
		time.Sleep(time.Duration(round) * 3 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if len(durable) < want {
			t.Fatalf("child stopped after %d durable blocks", len(durable))
		}
		checkCrashDir(t, dir, durable)
	}
}

func checkCrashDir(t *testing.T, dir string, durable []int) {
	t.Helper()
	// No file under a final name may be partial.
	finals := 0
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			return err
		}
		finals++
		if verr := format.VerifyFile(p); verr != nil {
			t.Errorf("torn or corrupt file under a final name: %s: %v", p, verr)
		}
		return nil
	})
	d, err := NewDirTier(DirConfig{Kind: "nvme", Dir: dir, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if u := d.Usage(); int(u.Files) != finals {
		t.Errorf("rebuilt index has %d files, directory %d", u.Files, finals)
	}
	for _, n := range durable {
		k, data := testBlock("crash", n, crashPayload)
		got, err := os.ReadFile(filepath.Join(dir, k.Path()))
		if err != nil {
			t.Fatalf("durable block %d lost: %v", n, err)
		}
		mustEqual(t, fmt.Sprintf("durable block %d", n), got, data)
	}
	// The rebuild removed leftover temp files.
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("temp file left after rebuild: %s", p)
		}
		return err
	})
}
