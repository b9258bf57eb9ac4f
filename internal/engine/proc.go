package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Proc drives an engine process (one running Main) from the other side:
// a test or a tool starts it, reads its ready line, sends it commands and
// can kill it. Every write made into its memory is recorded (Wrote, Fill)
// so Verify can have the engine check all of its memory at once.
type Proc struct {
	// From the ready line.
	Size   int64  // bytes of memory
	Path   string // sim: the shared-memory file
	Handle string // ipc: the segment's IPC handle, 128 hex digits
	UUID   string // ipc, vmm: the GPU's UUID
	Token  string // the GPU socket's token for the fd it sent, if any

	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	mu     sync.Mutex
	stderr bytes.Buffer
	writes []Write
	dir    string
}

// lockedWriter is stderr shared with the process's copier goroutine.
type lockedWriter struct{ p *Proc }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.stderr.Write(b)
}

// Start runs exe, which must call Main when EnvKind is set (a test
// binary re-executed, or a command), with env added to this process's
// environment and files inherited as descriptors 3 and up (say, its own
// descriptor of .ucm/gpu, which then dies with it), and waits for its
// ready line. dir keeps its plan files.
func Start(exe, dir string, files []*os.File, env ...string) (*Proc, error) {
	p := &Proc{dir: dir}
	p.cmd = exec.Command(exe)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.ExtraFiles = files
	p.cmd.Stderr = lockedWriter{p}
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewReader(stdout)
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	ready, err := p.readLine()
	fields := strings.Fields(ready)
	if err != nil || len(fields) < 2 || fields[0] != "ready" {
		p.Kill()
		return nil, fmt.Errorf("engine: %q, %v (stderr: %s)", ready, err, p.Stderr())
	}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "size":
			p.Size, _ = strconv.ParseInt(v, 10, 64)
		case "path":
			p.Path = v
		case "handle":
			p.Handle = v
		case "uuid":
			p.UUID = v
		case "token":
			p.Token = v
		}
	}
	return p, nil
}

// Stderr is what the process wrote to its standard error so far.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func (p *Proc) readLine() (string, error) {
	line, err := p.out.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

// Call sends one command and returns the answer line.
func (p *Proc) Call(format string, args ...any) (string, error) {
	if _, err := fmt.Fprintf(p.in, format+"\n", args...); err != nil {
		return "", fmt.Errorf("engine: %w (stderr: %s)", err, p.Stderr())
	}
	line, err := p.readLine()
	if err != nil {
		return "", fmt.Errorf("engine: %w (stderr: %s)", err, p.Stderr())
	}
	return line, nil
}

// Wrote records writes made into the engine's memory from outside (the
// daemon's copies).
func (p *Proc) Wrote(ws ...Write) { p.writes = append(p.writes, ws...) }

// Writes are the writes recorded so far, in order.
func (p *Proc) Writes() []Write { return p.writes }

// Fill makes the engine write Pattern(seed, n) at off itself.
func (p *Proc) Fill(off int64, n int, seed uint64) error {
	got, err := p.Call("fill %d %d %d", off, n, seed)
	if err == nil && got != "ok" {
		err = fmt.Errorf("engine fill: %s", got)
	}
	if err == nil {
		p.Wrote(Write{Off: off, Len: n, Seed: seed})
	}
	return err
}

// Verify has the engine check every byte of its memory: the recorded
// writes where they landed, the guard bytes everywhere else.
func (p *Proc) Verify() error {
	data, err := json.Marshal(p.writes)
	if err != nil {
		return err
	}
	plan := filepath.Join(p.dir, "plan.json")
	if err := os.WriteFile(plan, data, 0o600); err != nil {
		return err
	}
	got, err := p.Call("verify %s", plan)
	if err == nil && got != "ok" {
		err = fmt.Errorf("the engine sees %s", got)
	}
	return err
}

// Die makes the engine exit at once, freeing nothing (a crash), and
// waits for it.
func (p *Proc) Die() error {
	fmt.Fprintln(p.in, "die")
	p.in.Close()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		return fmt.Errorf("engine die: %v (stderr: %s)", err, p.Stderr())
	}
	return nil
}

// Quit ends the engine, which frees its memory; a no-op once it exited.
func (p *Proc) Quit() error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	line, err := p.Call("quit")
	p.in.Close()
	werr := p.cmd.Wait()
	switch {
	case err != nil:
		return err
	case line != "bye":
		return fmt.Errorf("engine quit: %q (stderr: %s)", line, p.Stderr())
	case werr != nil:
		return fmt.Errorf("engine exit: %v (stderr: %s)", werr, p.Stderr())
	}
	return nil
}

// Kill kills the process and waits for it.
func (p *Proc) Kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		p.in.Close()
		p.cmd.Wait()
	}
}
