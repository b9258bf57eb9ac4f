package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// helperReadyTimeout bounds how long the helper waits for the daemon's
// READY=1: longer than the daemon's own readiness bound, so the daemon
// reports a slow mount itself.
const helperReadyTimeout = readyTimeout + 30*time.Second

// startDaemon starts `ucmfs mount` in the background (its own session,
// stdin /dev/null, stdout and stderr appended to the log file) and waits
// for the sd_notify READY=1 it sends once the mount answers, on a socket
// of this process. If the daemon exits first, the error carries what it
// logged.
func startDaemon(ctx context.Context, req helperRequest) error {
	mnt, err := filepath.Abs(req.MountArgs[len(req.MountArgs)-1])
	if err != nil {
		return err
	}
	logPath := req.LogFile
	if logPath == "" {
		if logPath, err = defaultLogFile(mnt); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	defer logf.Close()
	start, _ := logf.Seek(0, io.SeekEnd)
	sockDir, err := os.MkdirTemp("", "ucmfs-helper-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify socket: %w", err)
	}
	defer conn.Close()

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, append([]string{"mount"}, req.MountArgs...)...)
	cmd.Args[0] = "ucmfs" // not the helper's name: the child is the daemon
	cmd.Env = append(serviceFreeEnv(), "NOTIFY_SOCKET="+sock)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ready := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if line == "READY=1" {
					close(ready)
					return
				}
			}
		}
	}()
	select {
	case <-ready:
		return nil // the daemon goes on; its Wait goroutine ends with this process
	case err := <-exited:
		return fmt.Errorf("the daemon exited before the mount was ready (%v): %s", err, logTail(logPath, start))
	case <-time.After(helperReadyTimeout):
		cmd.Process.Signal(syscall.SIGTERM)
		return fmt.Errorf("the mount was not ready after %v; see %s", helperReadyTimeout, logPath)
	case <-ctx.Done():
		cmd.Process.Signal(syscall.SIGTERM)
		return ctx.Err()
	}
}

// serviceFreeEnv is this process's environment without the variables of
// a service manager talking to this process (they are not the daemon's).
func serviceFreeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// defaultLogFile is where a helper-started daemon logs:
// /var/log/ucmfs/<mount point, escaped>.log as root, else the same name
// under $XDG_STATE_HOME/ucmfs (~/.local/state/ucmfs).
func defaultLogFile(mnt string) (string, error) {
	name := strings.ReplaceAll(strings.Trim(mnt, "/"), "/", "-")
	if name == "" {
		name = "root"
	}
	name += ".log"
	if os.Geteuid() == 0 {
		return filepath.Join("/var/log/ucmfs", name), nil
	}
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("no home directory for the log file: give -o log_file=PATH")
		}
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "ucmfs", name), nil
}

// logTail is what was appended to the log file since offset start, at
// most its last 2 KiB, trimmed.
func logTail(path string, start int64) string {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < start {
		return "(see " + path + ")"
	}
	data = data[start:]
	if len(data) > 2048 {
		data = data[len(data)-2048:]
	}
	return strings.TrimSpace(string(data))
}
