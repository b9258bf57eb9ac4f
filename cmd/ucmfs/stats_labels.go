package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/dustin/go-humanize"
)

// mountRows are the human rows of the counters the mount adds to the
// stack's snapshot (docs/control.md, stats). Each is a label and a
// template whose {field} (or {field:bytes}) names a snapshot field; a row
// is shown when all its fields are present. A field no row names is shown
// as it is, under its name with spaces, so a new counter is never hidden.
var mountRows = []struct{ label, tmpl string }{
	{"lookups", "{lookups} requests ({lookup_ids} ids, {lookup_hits} present)"},
	{"prefetches", "{prefetches} requests (queued {prefetch_queued}, missing {prefetch_missing}, " +
		"promoted {prefetch_promoted}, failed {prefetch_failed}, pending {prefetch_pending})"},
	{"flushes", "{flushes} (errors {flush_errors})"},
	{"control errors", "{control_errors}"},
	{"GPU", "device {gpu_device}, {gpu_regions} regions registered"},
	{"GPU loads", "{gpu_loads} requests ({gpu_load_blocks} blocks, {gpu_load_bytes:bytes}, {gpu_load_unmapped} unmapped)"},
	{"GPU dumps", "{gpu_dumps} requests ({gpu_dump_blocks} blocks, {gpu_dump_bytes:bytes}, {gpu_dump_existing} already there)"},
	{"sidecars derived", "{repr_derived}"},
	{"top-k", "{topks} requests ({topk_candidates} candidates, {topk_missing} missing, " +
		"{topk_derived} sidecars derived, {topk_reused} index reuses)"},
	{"passthrough", "{passthrough}"},
}

var rowField = regexp.MustCompile(`\{([a-z0-9_]+)(:bytes)?\}`)

// mountStatsRows renders the extra fields of a snapshot (name -> raw
// JSON value) as labelled rows, then the fields no row covers.
func mountStatsRows(extra map[string]json.RawMessage) [][2]string {
	used := map[string]bool{}
	var rows [][2]string
	for _, r := range mountRows {
		complete := true
		text := rowField.ReplaceAllStringFunc(r.tmpl, func(m string) string {
			sub := rowField.FindStringSubmatch(m)
			raw, ok := extra[sub[1]]
			if !ok {
				complete = false
				return ""
			}
			return formatStatValue(raw, sub[2] == ":bytes")
		})
		if !complete {
			continue
		}
		for _, sub := range rowField.FindAllStringSubmatch(r.tmpl, -1) {
			used[sub[1]] = true
		}
		rows = append(rows, [2]string{r.label, text})
	}
	var rest []string
	for k := range extra {
		if !used[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		rows = append(rows, [2]string{strings.ReplaceAll(k, "_", " "), formatStatValue(extra[k], false)})
	}
	return rows
}

// formatStatValue shows a JSON value: a string without quotes, a whole
// number with thousands separators (or as bytes), anything else as JSON.
func formatStatValue(raw json.RawMessage, bytes bool) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	switch x := v.(type) {
	case string:
		return x
	case float64:
		if bytes && x >= 0 {
			return humanize.IBytes(uint64(x))
		}
		if x == float64(int64(x)) {
			return humanize.Comma(int64(x))
		}
		return fmt.Sprint(x)
	}
	return string(raw)
}
