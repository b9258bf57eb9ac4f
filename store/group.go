package store

import (
	"fmt"
	"strings"
	"sync"

	"github.com/ucmfs/ucmfs/hybrid"
)

// The KV-cache group kind of each model directory (user.ucm.group,
// docs/hybrid.md): full attention unless set. A hybrid lookup reads it to
// know which blocks of the group a prefix hit needs.

// groupSettings holds the kinds set per model.
type groupSettings struct {
	mu sync.Mutex
	m  map[string]hybrid.Spec
}

// ModelGroup is model's group kind (full attention when none is set).
func (s *Store) ModelGroup(model string) hybrid.Spec {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	return s.groups.m[model]
}

// SetModelGroup sets model's group kind from its text ("full",
// "swa:<W>", "chunk:<C>", "mamba"); ErrInvalid for anything else. The
// kind is kept in the model's settings record (settings.go).
func (s *Store) SetModelGroup(model, value string) error {
	spec, err := hybrid.ParseSpec(strings.TrimSpace(value))
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	text := spec.String()
	if spec.Kind == hybrid.Full {
		text = "" // the default: nothing to keep
	}
	if err := s.updateSettings(model, func(v *Settings) error { v.Group = text; return nil }); err != nil {
		return err
	}
	s.setGroup(model, spec)
	return nil
}

// setGroup records model's kind in the table the lookups read.
func (s *Store) setGroup(model string, spec hybrid.Spec) {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	if s.groups.m == nil {
		s.groups.m = make(map[string]hybrid.Spec)
	}
	if spec.Kind == hybrid.Full {
		delete(s.groups.m, model)
	} else {
		s.groups.m[model] = spec
	}
}

// forgetGroup drops model's kind (the model was removed).
func (s *Store) forgetGroup(model string) {
	s.groups.mu.Lock()
	delete(s.groups.m, model)
	s.groups.mu.Unlock()
}
