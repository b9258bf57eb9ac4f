package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ucmfs/ucmfs/control/line"
)

// Refused control requests: every one is answered "err <ERRNO> <message>",
// logged in one line and counted in control_errors (Env.refuse). The
// errno's name comes from the front end (Env.ErrName), the one place that
// turns errors into errnos; this package only says what went wrong, with
// the sentinels below or those of store, tiers, format and gpu.

// Sentinels of refused requests that no lower package names (the shared
// ones, invalid, too long and permission denied, are package line's; the
// GPU engine's are package transfer's).
var (
	// ErrBackpressure: too many answers wait unread (ENOBUFS).
	ErrBackpressure = errors.New("answers wait unread")
	// ErrSessions: the caller (or everyone) has MaxSessionsPerUser
	// (MaxSessions) control sessions open already (EMFILE).
	ErrSessions = errors.New("too many control sessions open")
)

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
		"errno", name, "err", msg, "request", line.Clip(req))
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
