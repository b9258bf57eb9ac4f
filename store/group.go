package store

import (
	"fmt"
	"strings"

	"github.com/ucmfs/ucmfs/hybrid"
)

// The KV-cache group kind of each model directory (user.ucm.group,
// docs/hybrid.md): full attention unless set. A hybrid lookup reads it to
// know which blocks of the group a prefix hit needs.

// Group is model's group kind, from its settings record (full
// attention when none is set, or when the record's text does not parse).
func (ms Models) Group(model string) hybrid.Spec {
	spec, err := hybrid.ParseSpec(ms.s.modelSettings(model).Group)
	if err != nil {
		return hybrid.Spec{Kind: hybrid.Full}
	}
	return spec
}

// SetGroup sets model's group kind from its text ("full",
// "swa:<W>", "chunk:<C>", "mamba"); ErrInvalid for anything else. The
// kind is kept in the model's settings record (settings.go).
func (ms Models) SetGroup(model, value string) error {
	spec, err := hybrid.ParseSpec(strings.TrimSpace(value))
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	text := spec.String()
	if spec.Kind == hybrid.Full {
		text = "" // the default: nothing to keep
	}
	return ms.s.updateSettings(model, func(v *Settings) error { v.Group = text; return nil })
}
