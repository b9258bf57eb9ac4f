package sparse

import "errors"

// ErrUnsupported reports an input this package cannot derive from or
// rank: a block whose dtype is not float16, bfloat16 or float32, a block
// that does not state num_kv_heads and head_dim, or a sidecar whose dtype
// does not fit its kind.
var ErrUnsupported = errors.New("unsupported input")

// ErrArgument reports a bad argument: an unknown kind, a param out of
// range, k < 1, a layer out of range, or a query of the wrong shape.
var ErrArgument = errors.New("invalid argument")

// ErrMismatch reports a sidecar that cannot join an index: another kind,
// another shape than the sidecars before it, or an id other than the
// candidate's.
var ErrMismatch = errors.New("representation does not match")
