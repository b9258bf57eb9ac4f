package store

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"sync"

	"github.com/ucmfs/ucmfs/events"
	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
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

// maxKeyPatternInsts and maxKeyPatternRunes bound a key_pattern's
// compiled program: its instructions, and the rune ranges of its
// character classes (which the one-pass matcher of an anchored pattern
// copies per instruction). 256 bytes of RE2 can compile to tens of
// thousands of instructions, or to a counted repetition of a Unicode
// class: megabytes each (`^(x)\pL{900}`: 7 MiB). A pattern that reads a
// hash from a name needs a few hundred of both (`^([0-9a-f]{64})_`: 70
// instructions, 257 runes); within the bounds a pattern holds at most
// about 150 KiB.
const (
	maxKeyPatternInsts = 1024
	maxKeyPatternRunes = 4096
)

// keyPatternsKept bounds the compiled patterns kept: each model's
// owner may set patterns of their choice, one after another, and every
// one would otherwise stay compiled for good. Past it, one kept pattern
// is dropped (it is compiled again when a model's events need it).
const keyPatternsKept = 64

// keyPatterns caches the compiled patterns, by their text, up to
// keyPatternsKept.
var keyPatterns struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

// compileKeyPattern compiles a key_pattern, checking its rules.
func compileKeyPattern(p string) (*regexp.Regexp, error) {
	keyPatterns.Lock()
	re, ok := keyPatterns.m[p]
	keyPatterns.Unlock()
	if ok {
		return re, nil
	}
	if len(p) > MaxKeyPattern {
		return nil, fmt.Errorf("key_pattern longer than %d bytes: %w", MaxKeyPattern, ErrInvalid)
	}
	if err := checkKeyPatternSize(p); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("key_pattern %q: %v: %w", p, err, ErrInvalid)
	}
	if re.NumSubexp() != 1 {
		return nil, fmt.Errorf("key_pattern %q: want exactly one capture group (the hash's hex digits), it has %d: %w", p, re.NumSubexp(), ErrInvalid)
	}
	keyPatterns.Lock()
	defer keyPatterns.Unlock()
	if keyPatterns.m == nil {
		keyPatterns.m = make(map[string]*regexp.Regexp)
	}
	for old := range keyPatterns.m {
		if len(keyPatterns.m) < keyPatternsKept {
			break
		}
		delete(keyPatterns.m, old)
	}
	keyPatterns.m[p] = re
	return re, nil
}

// checkKeyPatternSize refuses a pattern whose program passes
// maxKeyPatternInsts or maxKeyPatternRunes (a pattern that does not
// parse passes: Compile says why).
func checkKeyPatternSize(p string) error {
	parsed, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil
	}
	runes := 0
	for _, in := range prog.Inst {
		runes += len(in.Rune)
	}
	if len(prog.Inst) > maxKeyPatternInsts || runes > maxKeyPatternRunes {
		return fmt.Errorf("key_pattern %q compiles to %d instructions and %d runes of classes, more than %d and %d: %w",
			p, len(prog.Inst), runes, maxKeyPatternInsts, maxKeyPatternRunes, ErrInvalid)
	}
	return nil
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
	if !registry.Of(k).Tree() {
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
