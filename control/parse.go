package control

import (
	"github.com/ucmfs/ucmfs/hashdir"
	"github.com/ucmfs/ucmfs/store"
)

// Request parsing for the control files: tokens are separated by spaces
// or tabs; nothing here allocates per token or per id.

// tokens walks the space-separated tokens of a request.
type tokens struct {
	b []byte
	n int // tokens returned so far
}

// next returns the next token, or nil at the end.
func (t *tokens) next() []byte {
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

// done reports whether no token is left.
func (t *tokens) done() bool {
	for _, c := range t.b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

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

// parseID decodes 32 lowercase hex digits.
func parseID(tok []byte) (id hashdir.ID, ok bool) {
	if len(tok) != 2*hashdir.IDLen {
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

// controlModel reads the model token of a request: a valid name (EINVAL)
// of a model the mount knows (ENOENT).
func (s *Env) controlModel(t *tokens) (string, error) {
	tok := t.next()
	if tok == nil {
		return "", reqErr(ErrInvalid, "missing model name")
	}
	model := string(tok)
	if err := hashdir.ValidateModel(model); err != nil {
		return "", reqErr(ErrInvalid, "model %q: not a valid model directory name", clip(tok))
	}
	if !s.store.ModelExists(model) {
		return "", reqErr(store.ErrNotFound, "model %q does not exist", model)
	}
	return model, nil
}

// parseIDs appends the remaining tokens of t, block ids, to ids: at
// least one (EINVAL), at most MaxIDs (E2BIG), each 32 lowercase hex
// digits (EINVAL, naming the first bad one by its position, from 1).
func parseIDs(t *tokens, ids []hashdir.ID) ([]hashdir.ID, error) {
	for {
		tok := t.next()
		if tok == nil {
			break
		}
		if len(ids) == MaxIDs {
			return ids, reqErr(ErrTooMany, "more than %d ids in one request", MaxIDs)
		}
		id, ok := parseID(tok)
		if !ok {
			return ids, reqErr(ErrInvalid, "id %d %q: not 32 lowercase hex digits", len(ids)+1, clip(tok))
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return ids, reqErr(ErrInvalid, "no block ids")
	}
	return ids, nil
}
