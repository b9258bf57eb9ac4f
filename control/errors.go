package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// Refused control requests: every one is answered "err <ERRNO> <message>",
// logged in one line and counted in control_errors (Env.refuse). The
// errno's name comes from the front end (Env.ErrName), the one place that
// turns errors into errnos; this package only says what went wrong, with
// the sentinels below or those of store, tiers, hashdir and gpu.

// Sentinels of refused requests that no lower package names.
var (
	// ErrInvalid: a request that breaks its file's grammar (EINVAL).
	ErrInvalid = errors.New("invalid request")
	// ErrTooMany: a request line, or a list in it, past its limit (E2BIG).
	ErrTooMany = errors.New("request too long")
	// ErrBadRegion: a region number the session did not register (EBADF).
	ErrBadRegion = errors.New("no such region")
	// ErrTooManyRegions: the session holds the most regions it may (EMFILE).
	ErrTooManyRegions = errors.New("too many regions")
	// ErrBackpressure: too many answers wait unread (ENOBUFS).
	ErrBackpressure = errors.New("answers wait unread")
	// ErrAccess: the caller may not use what the request names (EACCES).
	ErrAccess = errors.New("permission denied")
	// ErrNoToken: register vmm names a token no descriptor waits under
	// for the caller: never given, taken already, expired, or another
	// user's (ENOENT).
	ErrNoToken = errors.New("no descriptor under that token")
	// ErrNoSocket: register vmm on a mount without the GPU socket
	// (ENOTSUP).
	ErrNoSocket = errors.New("no GPU socket")
)

// requestError is a refused control request: the sentinel it stands for
// (errors.Is matches it), and a message for the answer line.
type requestError struct {
	code error
	msg  string
}

func (e *requestError) Error() string { return e.msg }
func (e *requestError) Unwrap() error { return e.code }

// reqErr makes a requestError.
func reqErr(code error, format string, args ...any) error {
	return &requestError{code: code, msg: fmt.Sprintf(format, args...)}
}

// refuse appends the answer of a refused request of file to out:
// "err <ERRNO> <message>". It logs one line (a warning, or an error for
// an unexpected failure, which is EIO) and counts it in control_errors.
func (e *Env) refuse(out []byte, file string, req []byte, err error) []byte {
	name, known := e.ErrName(err)
	msg := oneLine(err.Error())
	if len(msg) > maxAnswer {
		msg = fmt.Sprintf("%s... (%d bytes cut)", msg[:maxAnswer], len(msg)-maxAnswer)
	}
	e.store.Counters.Errors.Add(1)
	level := slog.LevelWarn
	if !known {
		level = slog.LevelError
	}
	e.Log.Log(context.Background(), level, "control request refused", "file", Dir+"/"+file,
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

// maxAnswer bounds the message of an "err" answer line, in bytes: a flush
// that fails for thousands of blocks says how many and shows the first.
const maxAnswer = 1024

// clipLen is how much of a request or token a log line or message shows.
const clipLen = 80

// clip returns the start of b as a string, marked when cut.
func clip(b []byte) string {
	if len(b) <= clipLen {
		return string(b)
	}
	return string(b[:clipLen]) + "..."
}
