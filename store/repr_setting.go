package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/sparse"
)

// ReprSetting is the kind of sidecar a mount derives for the blocks of a
// model that have none stored (docs/sparse.md, "In the mount"): a kind
// and its param, or no derivation at all. The zero value derives kind 0
// (mean), the default.
type ReprSetting struct {
	// Off: derive nothing; <id>.repr exists only when one is stored.
	Off bool
	// Kind is the kind derived.
	Kind format.ReprKind
	// Param is the merge factor (kind 2) or hash_bits (kind 3); 0 takes
	// the default (sparse.DefaultMerge, sparse.DefaultHashBits).
	Param uint32
}

// ParseReprSetting parses the text form of a setting: "mean", "max",
// "merged" or "merged:N" (N >= 1 tokens per row), "signhash" or
// "signhash:BITS" (a multiple of 8 up to sparse.MaxHashBits), or "none".
// Errors wrap ErrInvalid.
func ParseReprSetting(s string) (ReprSetting, error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return ReprSetting{Off: true}, nil
	}
	name, arg, hasArg := strings.Cut(s, ":")
	kind, err := format.ParseReprKind(name)
	if err != nil {
		return ReprSetting{}, fmt.Errorf("sidecar kind %q: want mean, max, merged[:N], signhash[:BITS] or none: %w", s, ErrInvalid)
	}
	var param uint32
	if hasArg {
		if kind == format.ReprMean || kind == format.ReprMax {
			return ReprSetting{}, fmt.Errorf("sidecar kind %q: %s takes no parameter: %w", s, kind, ErrInvalid)
		}
		n, err := strconv.ParseUint(arg, 10, 32)
		if err != nil || n == 0 {
			return ReprSetting{}, fmt.Errorf("sidecar kind %q: parameter %q is not a positive integer: %w", s, arg, ErrInvalid)
		}
		param = uint32(n)
	}
	param, err = sparse.ResolveParam(kind, param)
	if err != nil {
		return ReprSetting{}, fmt.Errorf("sidecar kind %q: %v: %w", s, err, ErrInvalid)
	}
	return ReprSetting{Kind: kind, Param: param}, nil
}

// validate checks a setting made in code (Options.Repr): a known kind
// and a param it takes. Errors wrap ErrInvalid.
func (r ReprSetting) validate() error {
	if r.Off {
		return nil
	}
	if _, err := sparse.ResolveParam(r.Kind, r.Param); err != nil {
		return fmt.Errorf("sidecar kind: %v: %w", err, ErrInvalid)
	}
	return nil
}

// resolved returns the setting with its default param filled in.
func (r ReprSetting) resolved() ReprSetting {
	if !r.Off {
		if p, err := sparse.ResolveParam(r.Kind, r.Param); err == nil {
			r.Param = p
		}
	}
	return r
}

// String is the text form ParseReprSetting reads: "mean", "max",
// "merged:4", "signhash:128" or "none".
func (r ReprSetting) String() string {
	if r.Off {
		return "none"
	}
	r = r.resolved()
	switch r.Kind {
	case format.ReprMerged, format.ReprSignHash:
		return r.Kind.String() + ":" + strconv.FormatUint(uint64(r.Param), 10)
	}
	return r.Kind.String()
}

// Setting is the setting model derives with, its param resolved.
func (sc Sidecars) Setting(model string) ReprSetting {
	v := sc.s.opts.Repr
	if text := sc.s.modelSettings(model).ReprKind; text != "" {
		if own, err := ParseReprSetting(text); err == nil {
			v = own
		}
	}
	return v.resolved()
}

// setReprKind writes the repr_kind attribute of model: a setting, or
// "default" to take the mount's again.
func (s *Store) setReprKind(model, value string) error {
	if value == "default" {
		return s.updateSettings(model, func(st *Settings) error { st.ReprKind = ""; return nil })
	}
	v, err := ParseReprSetting(value)
	if err != nil {
		return err
	}
	return s.updateSettings(model, func(st *Settings) error { st.ReprKind = v.String(); return nil })
}
