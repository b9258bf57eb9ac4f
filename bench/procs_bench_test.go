package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// readerEnv, set in a child's environment, makes the test binary a
// reader process (readerChild) instead of running tests.
const readerEnv = "UCMFS_BENCH_READER"

// BenchmarkMountRead2MiB4Procs is BenchmarkMountRead2MiB from four reader
// processes at once, as four engine workers would read (the blocks
// resident in the memory tier). The children are this test binary
// started once per sub-benchmark; they read their block list and wait
// before the timer starts, so process start-up is not timed. Each
// timed iteration is one block read (open, read, close) in one of them.
func BenchmarkMountRead2MiB4Procs(b *testing.B) {
	runTargets(b, func(b *testing.B, t *target) {
		paths := t.set(b, "read", readSet, bigBlock)
		procs := make([]*readerProc, readThreads)
		for i := range procs {
			p, err := startReader(paths, i)
			if err != nil {
				b.Fatal(err)
			}
			defer p.stop()
			procs[i] = p
		}
		b.SetBytes(bigBlock)
		b.ResetTimer()
		for i, p := range procs { // b.N reads in all, split evenly
			n := b.N / len(procs)
			if i < b.N%len(procs) {
				n++
			}
			if err := p.send(fmt.Sprintf("go %d\n", n)); err != nil {
				b.Fatal(err)
			}
		}
		for _, p := range procs {
			if err := p.wait(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
	})
}

// readerProc is one running reader child.
type readerProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startReader starts a reader child over paths, starting at paths[first],
// and returns once it has read its list.
func startReader(paths []string, first int) (*readerProc, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), readerEnv+"="+strconv.Itoa(first))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &readerProc{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if err := p.send(strings.Join(paths, "\n") + "\n\n"); err != nil {
		p.stop()
		return nil, err
	}
	if err := p.wait(); err != nil { // "ok": the list is read
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *readerProc) send(line string) error {
	_, err := io.WriteString(p.in, line)
	return err
}

// wait returns once the child answers "ok", or with its error.
func (p *readerProc) wait() error {
	line, err := p.out.ReadString('\n')
	if err != nil {
		return fmt.Errorf("reader process: %w", err)
	}
	if line = strings.TrimSpace(line); line != "ok" {
		return fmt.Errorf("reader process: %s", line)
	}
	return nil
}

// stop closes the child's input, which ends it, and reaps it.
func (p *readerProc) stop() {
	p.in.Close()
	p.cmd.Wait()
}

// readerChild is the body of a reader process: it reads a list of paths
// (one per line, ending with an empty line) and answers "ok", then for
// every "go N" line reads N blocks of the list in turn and answers "ok"
// (or the error). It ends when its input does.
func readerChild(first string) int {
	next, _ := strconv.Atoi(first)
	in := bufio.NewScanner(os.Stdin)
	var paths []string
	for in.Scan() && in.Text() != "" {
		paths = append(paths, in.Text())
	}
	if len(paths) == 0 {
		fmt.Println("no paths")
		return 1
	}
	fmt.Println("ok")
	buf := make([]byte, bigBlock)
	for in.Scan() {
		n, err := strconv.Atoi(strings.TrimPrefix(in.Text(), "go "))
		for ; err == nil && n > 0; n-- {
			err = readBlock(paths[next%len(paths)], buf)
			next++
		}
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("ok")
	}
	return 0
}
