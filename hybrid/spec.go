package hybrid

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is the kind of layers of a KV-cache group.
type Kind uint8

// The group kinds.
const (
	// Full attention: a hit needs every block of the prefix.
	Full Kind = iota
	// SlidingWindow attention: a hit needs only the blocks covering the
	// last Window-1 tokens of the prefix.
	SlidingWindow
	// ChunkedLocal attention (Llama 4): a hit needs only the blocks of the
	// prefix's last, unfinished chunk of Window tokens.
	ChunkedLocal
	// Mamba (state-space) layers: a hit needs only the state at the end
	// of the prefix, stored under the id of the block that ends there.
	Mamba
)

// Spec is a group's kind and, for SlidingWindow and ChunkedLocal, its
// window or chunk size in tokens.
type Spec struct {
	Kind   Kind
	Window int
}

// String is the spec as the user.ucm.group xattr holds it: "full",
// "swa:<W>", "chunk:<C>" or "mamba".
func (s Spec) String() string {
	switch s.Kind {
	case SlidingWindow:
		return "swa:" + strconv.Itoa(s.Window)
	case ChunkedLocal:
		return "chunk:" + strconv.Itoa(s.Window)
	case Mamba:
		return "mamba"
	}
	return "full"
}

// ParseSpec parses what Spec.String writes; a window or chunk size must
// be >= 1.
func ParseSpec(s string) (Spec, error) {
	switch s {
	case "full":
		return Spec{Kind: Full}, nil
	case "mamba":
		return Spec{Kind: Mamba}, nil
	}
	name, n, ok := strings.Cut(s, ":")
	w, err := strconv.Atoi(n)
	if !ok || err != nil || w < 1 || n != strconv.Itoa(w) {
		return Spec{}, fmt.Errorf("group kind %q is not full, swa:<W>, chunk:<C> or mamba (W, C >= 1)", s)
	}
	switch name {
	case "swa":
		return Spec{Kind: SlidingWindow, Window: w}, nil
	case "chunk":
		return Spec{Kind: ChunkedLocal, Window: w}, nil
	}
	return Spec{}, fmt.Errorf("group kind %q is not full, swa:<W>, chunk:<C> or mamba", s)
}
