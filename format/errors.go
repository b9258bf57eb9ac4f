package format

import (
	"errors"
	"fmt"
)

// ErrFormat reports a block or sidecar file that breaks a rule of docs/spec.md §4-5.
// Every validation error of this package wraps it, as a *FormatError that
// names the rule.
var ErrFormat = errors.New("invalid format")

// Rule names one validation rule of a block or sidecar file; the list, in
// the order they are checked, is in docs/format.md.
type Rule string

// The validation rules.
const (
	RuleSize        Rule = "size"           // file has at least the 64 header bytes
	RuleMagic       Rule = "magic"          // "UCMB" or "UCMR"
	RuleVersion     Rule = "version"        // 1
	RuleID          Rule = "id"             // header id equals the file name
	RuleNumLayers   Rule = "num_layers"     // >= 1
	RuleBlockSize   Rule = "block_size"     // >= 1
	RuleDtype       Rule = "dtype"          // a known dtype (uint8 for sign-hash sidecars)
	RuleFlags       Rule = "flags"          // only bit 0 may be set
	RulePayloadLen  Rule = "payload_len"    // 0 or file size - 64
	RulePayloadSize Rule = "payload_size"   // payload matches the shape
	RuleCRC         Rule = "crc"            // payload CRC-32C equals the header's
	RuleXattrCRC    Rule = "xattr_crc"      // payload CRC-32C equals user.ucm.crc32c
	RuleXattrHCRC   Rule = "xattr_hcrc"     // header CRC-32C equals user.ucm.hcrc32c
	RuleKind        Rule = "kind"           // a known sidecar kind
	RuleNumKVHeads  Rule = "num_kv_heads"   // sidecar: >= 1, equal to the block's if stated
	RuleRows        Rule = "rows"           // sidecar rows fit the kind
	RuleDim         Rule = "dim"            // sidecar dim fits the kind
	RuleParam       Rule = "param"          // sidecar param fits the kind
	RuleReserved    Rule = "reserved"       // sidecar bytes 60..63 are zero
	RuleOrphan      Rule = "orphan_sidecar" // sidecar without its block
	RuleKindOfFile  Rule = "file_type"      // neither a block nor a sidecar
	RuleOpaque      Rule = "opaque"         // an opaque block states no K/V shape and has no sidecar
)

// FormatError is a validation failure: which file format, which rule, and
// the values that broke it. errors.Is(err, ErrFormat) holds for it.
type FormatError struct {
	Format string // "UCMB" (block), "UCMR" (sidecar) or "raw" (RawFormat)
	Rule   Rule
	Detail string
}

// Error names the format, the rule and the detail.
func (e *FormatError) Error() string {
	return fmt.Sprintf("%s %s rule broken: %s", e.Format, e.Rule, e.Detail)
}

// Unwrap makes errors.Is(err, ErrFormat) true.
func (e *FormatError) Unwrap() error { return ErrFormat }

// RuleOf returns the rule a validation error names, or "" when err is not
// (and does not wrap) a *FormatError.
func RuleOf(err error) Rule {
	var fe *FormatError
	if errors.As(err, &fe) {
		return fe.Rule
	}
	return ""
}

func blockErr(rule Rule, format string, args ...any) error {
	return &FormatError{Format: BlockMagic, Rule: rule, Detail: fmt.Sprintf(format, args...)}
}

func reprErr(rule Rule, format string, args ...any) error {
	return &FormatError{Format: ReprMagic, Rule: rule, Detail: fmt.Sprintf(format, args...)}
}
