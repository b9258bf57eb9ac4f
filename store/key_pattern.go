package store

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
)

// user.ucm.key_pattern: how the block hash a router knows a file of a
// files model by is read from the file's path in the model, for engines
// whose names the default rule (events.EngineHash: "<hex digest>.bin",
// vLLM's fs tier and llm-d) does not fit. The value is an RE2 regular
// expression with one capture group, matched against the path; the group
// must capture hex digits, of which the last 16 (fewer: zero-padded) are
// the hash, as vLLM publishes its digests. "default" restores the default
// rule. A file the pattern does not match has no hash: .ucm/events shows
// it without one and --kv-events does not publish it.

// MaxKeyPattern is the longest key_pattern accepted, in bytes.
const MaxKeyPattern = 256

// keyPatterns caches the compiled patterns, by their text.
var keyPatterns sync.Map // string → *regexp.Regexp

// compileKeyPattern compiles a key_pattern, checking its rules.
func compileKeyPattern(p string) (*regexp.Regexp, error) {
	if re, ok := keyPatterns.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	if len(p) > MaxKeyPattern {
		return nil, fmt.Errorf("key_pattern longer than %d bytes: %w", MaxKeyPattern, ErrInvalid)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("key_pattern %q: %v: %w", p, err, ErrInvalid)
	}
	if re.NumSubexp() != 1 {
		return nil, fmt.Errorf("key_pattern %q: want exactly one capture group (the hash's hex digits), it has %d: %w", p, re.NumSubexp(), ErrInvalid)
	}
	keyPatterns.Store(p, re)
	return re, nil
}

// keyPatternAttr is user.ucm.key_pattern's value: the pattern, or
// "default".
func (s *Store) keyPatternAttr(model string) string {
	if p := s.modelSettings(model).KeyPattern; p != "" {
		return p
	}
	return "default"
}

// EngineHash is the hash a router knows k by: events.EngineHash, or for
// a file of a model with a key_pattern, the pattern's capture.
func (s *Store) EngineHash(k format.Key) (uint64, bool) {
	if k.Kind != format.File {
		return events.EngineHash(k)
	}
	return patternHash(s.modelSettings(k.Model).KeyPattern, k)
}

// patternHash is the hash of file k under key_pattern p ("": the default
// rule).
func patternHash(p string, k format.Key) (uint64, bool) {
	if p == "" {
		return events.EngineHash(k)
	}
	re, err := compileKeyPattern(p)
	if err != nil {
		return 0, false
	}
	m := re.FindStringSubmatch(k.Name)
	if m == nil || m[1] == "" {
		return 0, false
	}
	digits := m[1]
	if len(digits) > 16 {
		digits = digits[len(digits)-16:]
	}
	h, err := strconv.ParseUint(digits, 16, 64)
	return h, err == nil
}
