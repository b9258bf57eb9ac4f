package main

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The config file's errors name the file, the line and the key, and for
// an unknown key the valid ones: "ucmfs.yaml:3: unknown key "memroy" (did
// you mean memory? valid keys: ...)", never a Go type.

// yamlKeys are the yaml tags of a struct type, in field order.
func yamlKeys(v any) []string {
	t := reflect.TypeOf(v)
	var keys []string
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" {
			keys = append(keys, tag)
		}
	}
	return keys
}

// configKeys and tierKeys are the valid keys of the file and of a tier.
var (
	configKeys = yamlKeys(fileConfig{})
	tierKeys   = yamlKeys(fileTier{})
)

// keyLines says where each key of the document is: lines maps it to its
// line (top-level keys by name, tier keys as tiers[i].name; values'
// lines are their key's), values maps the line and column where a
// value starts to its key, so an error of a one-line mapping ({kind:
// nvme, size: 10XB}) names the key of the value it is about.
type keyLines struct {
	lines  map[string]int
	values map[[2]int]string
}

// checkConfigNode checks the shape of a parsed config document: a
// mapping of known keys, tiers a list of mappings of known keys. It
// returns where each key is.
func checkConfigNode(path string, doc *yaml.Node) (keyLines, error) {
	lines := keyLines{lines: map[string]int{}, values: map[[2]int]string{}}
	if doc.Kind == 0 || len(doc.Content) == 0 { // an empty file
		return lines, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return keyLines{}, fmt.Errorf("%s:%d: want a mapping of keys (%s: ...)", path, root.Line, configKeys[0])
	}
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if !slices.Contains(configKeys, k.Value) {
			errs = append(errs, unknownKey(path, k, configKeys))
			continue
		}
		lines.lines[k.Value] = k.Line
		lines.values[[2]int{v.Line, v.Column}] = k.Value
		if k.Value != "tiers" {
			continue
		}
		if v.Kind != yaml.SequenceNode {
			errs = append(errs, fmt.Errorf("%s:%d: tiers: want a list of tiers, each {kind, dir, size}", path, v.Line))
			continue
		}
		for j, t := range v.Content {
			name := "tiers[" + strconv.Itoa(j) + "]"
			lines.lines[name] = t.Line
			if t.Kind != yaml.MappingNode {
				errs = append(errs, fmt.Errorf("%s:%d: %s: want a mapping {kind, dir, size}", path, t.Line, name))
				continue
			}
			for m := 0; m+1 < len(t.Content); m += 2 {
				tk := t.Content[m]
				if !slices.Contains(tierKeys, tk.Value) {
					errs = append(errs, unknownKey(path+":"+name, tk, tierKeys))
				}
				lines.lines[name+"."+tk.Value] = tk.Line
				tv := t.Content[m+1]
				lines.values[[2]int{tv.Line, tv.Column}] = name + "." + tk.Value
			}
		}
	}
	return lines, errors.Join(errs...)
}

// unknownKey is the error of a key not in valid, with a suggestion.
func unknownKey(where string, k *yaml.Node, valid []string) error {
	hint := ""
	if s := closest(k.Value, valid); s != "" {
		hint = "did you mean " + s + "? "
	}
	file, sub, _ := strings.Cut(where, ":")
	if sub != "" {
		sub += ": "
	}
	return fmt.Errorf("%s:%d: %sunknown key %q (%svalid keys: %s)", file, k.Line, sub, k.Value, hint, strings.Join(valid, ", "))
}

// closest is the key of valid nearest to s by edit distance, when it is
// near enough to be a typo (at most 2 edits); else "".
func closest(s string, valid []string) string {
	best, bestD := "", 3
	for _, v := range valid {
		if d := editDistance(s, v); d < bestD {
			best, bestD = v, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// yamlTypeWords describe, for people, the Go types yaml reports.
var yamlTypeWords = map[string]string{
	"bool":            "true or false",
	"string":          "a string",
	"time.Duration":   "a duration such as 250ms, 30s or 1h",
	"[]main.fileTier": "a list of tiers, each {kind, dir, size}",
	"main.fileTier":   "a tier {kind, dir, size}",
}

var (
	yamlLineMsg   = regexp.MustCompile(`^(?:yaml: )?line (\d+): (?:column (\d+): )?(.*)$`)
	yamlUnmarshal = regexp.MustCompile("^cannot unmarshal !!\\w+ `(.*)` into (.+)$")
)

// configDecodeError rewrites an error of yaml's Decode: each "line N:
// cannot unmarshal !!str `x` into T" becomes "FILE:N: KEY: want <T in
// words>, got x"; other messages keep their text after FILE:N:.
func configDecodeError(path string, err error, lines keyLines) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var errs []error
	for _, msg := range msgs {
		m := yamlLineMsg.FindStringSubmatch(msg)
		if m == nil {
			errs = append(errs, fmt.Errorf("%s: %s", path, msg))
			continue
		}
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		text := m[3]
		if u := yamlUnmarshal.FindStringSubmatch(text); u != nil {
			want, ok := yamlTypeWords[u[2]]
			if !ok {
				want = strings.TrimPrefix(strings.TrimPrefix(u[2], "*"), "main.")
			}
			text = fmt.Sprintf("want %s, got %q", want, u[1])
			if u[2] == "bool" && (u[1] == "true" || u[1] == "false") {
				text = fmt.Sprintf("want true or false, got the string %q (quotes make it a string: write %s)", u[1], u[1])
			}
		}
		if key := lines.at(line, col); key != "" {
			text = key + ": " + text
		}
		errs = append(errs, fmt.Errorf("%s:%d: %s", path, line, text))
	}
	return errors.Join(errs...)
}

// at is the key whose value starts at line and col (col 0: unknown), or
// else the key on the line (the most specific one; of keys alike, such
// as those of a one-line tier, the first in order), or "".
func (l keyLines) at(line, col int) string {
	if k, ok := l.values[[2]int{line, col}]; ok && col > 0 {
		return k
	}
	best := ""
	for k, n := range l.lines {
		if n == line && (len(k) > len(best) || len(k) == len(best) && k < best) {
			best = k
		}
	}
	return best
}
