package fs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"

	"golang.org/x/sys/unix"
)

// Refused control requests: every one is answered "err <ERRNO> <message>",
// logged in one line and counted in control_errors (controlErr).

// requestError is a refused control request: the errno its answer line
// names, and a message. errors.Is matches the errno.
type requestError struct {
	errno syscall.Errno
	msg   string
}

func (e *requestError) Error() string { return e.msg }
func (e *requestError) Unwrap() error { return e.errno }

// reqErr makes a requestError.
func reqErr(errno syscall.Errno, format string, args ...any) error {
	return &requestError{errno: errno, msg: fmt.Sprintf(format, args...)}
}

// controlErr appends the answer of a refused request of file to out:
// "err <ERRNO> <message>". It logs one line (a warning, or an error for
// an unexpected failure, which is EIO) and counts it in control_errors.
func (s *fsState) controlErr(out []byte, file string, req []byte, err error) []byte {
	errno, known := mapErr(err)
	var reqErr *requestError
	if errors.As(err, &reqErr) {
		errno, known = reqErr.errno, true
	}
	name := unix.ErrnoName(errno)
	msg := oneLine(err.Error())
	s.ctl.errors.Add(1)
	level := slog.LevelWarn
	if !known {
		level = slog.LevelError
	}
	s.log.Log(context.Background(), level, "control request refused", "file", ucmName+"/"+file,
		"errno", name, "err", msg, "request", clip(req))
	out = append(out, "err "...)
	out = append(out, name...)
	out = append(out, ' ')
	out = append(out, msg...)
	return append(out, '\n')
}

// oneLine keeps a message on one line of printable ASCII.
func oneLine(msg string) string {
	b := []byte(msg)
	for i, c := range b {
		if c < ' ' || c > '~' {
			b[i] = ' '
		}
	}
	return string(b)
}

// clipLen is how much of a request or token a log line or message shows.
const clipLen = 80

// clip returns the start of b as a string, marked when cut.
func clip(b []byte) string {
	if len(b) <= clipLen {
		return string(b)
	}
	return string(b[:clipLen]) + "..."
}
