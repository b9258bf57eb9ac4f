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
	{"lookups", "{lookups} requests, {lookup_ids} ids, {lookup_hits} present"},
	{"prefetch", "{prefetches} requests, {prefetch_queued} ids queued, {prefetch_pending} waiting"},
	{"", "{prefetch_promoted} promoted, {prefetch_missing} missing, {prefetch_failed} failed"},
	{"flushes", "{flushes} ({flush_errors} errors); {control_errors} control requests refused"},
	{"GPU", "{gpu_device}, {gpu_regions} regions"},
	{"", "{gpu:gpu}"},
	{"GPU loads", "{gpu_loads} ({gpu_load_blocks} blocks, {gpu_load_bytes:bytes}, {gpu_load_unmapped} from files)"},
	{"GPU dumps", "{gpu_dumps} ({gpu_dump_blocks} blocks, {gpu_dump_bytes:bytes}, {gpu_dump_existing} there already)"},
	{"top-k", "{topks} requests, {topk_candidates} candidates, {topk_missing} missing, {topk_reused} reuses"},
	{"sidecars", "{repr_derived} derived ({topk_derived} by top-k)"},
	{"files", "{light_nodes} light nodes, {staging_files} staging, {writing_files} being written"},
	{"", "{parked_files} staging files parked, {pending_bytes:bytes} pending, {dirs} directories"},
}

var rowField = regexp.MustCompile(`\{([a-z0-9_]+)(:bytes|:gpu)?\}`)

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
			if sub[2] == ":gpu" {
				return formatGPUState(raw)
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

// formatGPUState is the one-line summary of the device's own state (the
// snapshot's "gpu" object): why auto fell back, or the driver, contexts
// and resets.
func formatGPUState(raw json.RawMessage) string {
	var g struct {
		Fallback      string `json:"fallback"`
		DriverVersion int    `json:"driver_version"`
		Contexts      []any  `json:"contexts"`
		Resets        int64  `json:"resets"`
	}
	if json.Unmarshal(raw, &g) != nil {
		return string(raw)
	}
	if g.Fallback != "" {
		return "no CUDA (ucmfs gpu probe says why)"
	}
	return fmt.Sprintf("driver %d.%d, %d contexts, %d resets", g.DriverVersion/1000, g.DriverVersion%1000/10, len(g.Contexts), g.Resets)
}
