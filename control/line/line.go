// Package line is the grammar the control files of .ucm/ share: a
// request is one line of space-separated tokens, answered by one line,
// "ok ..." or "err <ERRNO> <message>". It holds the tokenizer, the
// parsers of the tokens every file uses (block ids, counts, model names),
// the errors of a refused request, the sender of a request and the
// credentials of a session's opener, which its requests are checked as.
// Package control (the request files) and package transfer (the GPU
// transfer engine behind .ucm/gpu) both build on it; it imports nothing
// of ucmfs but format. Nothing here allocates per token or per id.
package line

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/ucmfs/ucmfs/format"
)

// MaxIDs is the most block ids (or blocks) one request may name.
const MaxIDs = 100_000

// Tokens walks the space- or tab-separated tokens of a request.
type Tokens struct {
	b []byte
	n int // tokens returned so far
}

// NewTokens returns the tokens of req.
func NewTokens(req []byte) Tokens { return Tokens{b: req} }

// Next returns the next token, or nil at the end.
func (t *Tokens) Next() []byte {
	i := 0
	for i < len(t.b) && (t.b[i] == ' ' || t.b[i] == '\t') {
		i++
	}
	j := i
	for j < len(t.b) && t.b[j] != ' ' && t.b[j] != '\t' {
		j++
	}
	tok := t.b[i:j]
	t.b = t.b[j:]
	if len(tok) == 0 {
		return nil
	}
	t.n++
	return tok
}

// Done reports whether no token is left.
func (t *Tokens) Done() bool {
	for _, c := range t.b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// Seen is the number of tokens Next returned.
func (t *Tokens) Seen() int { return t.n }

// unhex maps a byte to its value as a lowercase hex digit, 0xff if it is
// not one.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

// ID decodes a block id: 32 lowercase hex digits.
func ID(tok []byte) (id format.ID, ok bool) {
	if len(tok) != 2*format.IDLen {
		return id, false
	}
	var bad byte
	for i := range id {
		hi, lo := unhex[tok[2*i]], unhex[tok[2*i+1]]
		bad |= hi | lo
		id[i] = hi<<4 | lo
	}
	return id, bad&0xf0 == 0
}

// IDs appends the remaining tokens of t, block ids, to ids: at least one
// (ErrInvalid), at most max (ErrTooMany), each 32 lowercase hex digits
// (ErrInvalid, naming the first bad one by its position, from 1).
func IDs(t *Tokens, ids []format.ID, max int) ([]format.ID, error) {
	for {
		tok := t.Next()
		if tok == nil {
			break
		}
		if len(ids) == max {
			return ids, Err(ErrTooMany, "more than %d ids in one request", max)
		}
		id, ok := ID(tok)
		if !ok {
			return ids, Err(ErrInvalid, "id %d %q: not 32 lowercase hex digits", len(ids)+1, Clip(tok))
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return ids, Err(ErrInvalid, "no block ids")
	}
	return ids, nil
}

// KeepBuffer is the most bytes a buffer a session keeps between requests
// may hold (Keep).
const KeepBuffer = 1 << 20

// Keep empties a buffer a session keeps between requests, keeping its
// memory unless it grew past KeepBuffer bytes: a session that once took
// 100 000 ids keeps nothing of them while idle, so what idle sessions
// hold is bounded by their number.
func Keep[T any](s []T) []T {
	var z T
	if cap(s)*int(unsafe.Sizeof(z)) > KeepBuffer {
		return nil
	}
	return s[:0]
}

// Count parses a decimal count of at most MaxInt64.
func Count(tok []byte) (int64, bool) {
	if len(tok) == 0 || tok[0] < '0' || tok[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	return n, err == nil
}

// Cut splits b at the first c.
func Cut(b []byte, c byte) (before, after []byte, found bool) {
	for i, x := range b {
		if x == c {
			return b[:i], b[i+1:], true
		}
	}
	return b, nil, false
}

// Model reads the model token of a request: a valid name (ErrInvalid) of
// a model exists says the mount knows (notFound otherwise).
func Model(t *Tokens, exists func(string) bool, notFound error) (string, error) {
	tok := t.Next()
	if tok == nil {
		return "", Err(ErrInvalid, "missing model name")
	}
	model := string(tok)
	if err := format.ValidateModel(model); err != nil {
		return "", Err(ErrInvalid, "model %q: not a valid model directory name", Clip(tok))
	}
	if !exists(model) {
		return "", Err(notFound, "model %q does not exist", model)
	}
	return model, nil
}

// clipLen is how much of a request or token a log line or message shows.
const clipLen = 80

// Clip returns the start of b as a string, marked when cut.
func Clip(b []byte) string {
	if len(b) <= clipLen {
		return string(b)
	}
	return string(b[:clipLen]) + "..."
}

// Sentinels of refused requests that no lower package names. The front
// end turns each into an errno (the one in parentheses, for FUSE).
var (
	// ErrInvalid: a request that breaks its file's grammar (EINVAL).
	ErrInvalid = errors.New("invalid request")
	// ErrTooMany: a request line, or a list in it, past its limit (E2BIG).
	ErrTooMany = errors.New("request too long")
	// ErrAccess: the caller may not use what the request names (EACCES).
	ErrAccess = errors.New("permission denied")
)

// requestError is a refused request: the sentinel it stands for
// (errors.Is matches it), and a message for the answer line.
type requestError struct {
	code error
	msg  string
}

func (e *requestError) Error() string { return e.msg }
func (e *requestError) Unwrap() error { return e.code }

// Err makes the error of a refused request: code is the sentinel it
// stands for, the message is the answer line's.
func Err(code error, format string, args ...any) error {
	return &requestError{code: code, msg: fmt.Sprintf(format, args...)}
}

// Caller is who sent one request, as the kernel told the front end: the
// thread's fsuid, fsgid and number. What a control request may do is
// decided by the Creds of the session's opener, never by a Caller; a
// Caller is only checked against them (Creds.Admits).
type Caller struct {
	Uid, Gid, Pid uint32
}

type callerKey struct{}

// WithCaller returns ctx carrying the sender of a request.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the sender ctx carries; ok is false for a request from
// inside the daemon.
func CallerOf(ctx context.Context) (c Caller, ok bool) {
	c, ok = ctx.Value(callerKey{}).(Caller)
	return c, ok
}

type credsKey struct{}

// WithCreds returns ctx carrying the credentials a session's requests are
// checked as (its opener's).
func WithCreds(ctx context.Context, c *Creds) context.Context {
	return context.WithValue(ctx, credsKey{}, c)
}

// CredsOf returns the credentials ctx's requests are checked as; ok is
// false for a request from inside the daemon.
func CredsOf(ctx context.Context) (c *Creds, ok bool) {
	c, ok = ctx.Value(credsKey{}).(*Creds)
	return c, ok && c != nil
}
