// Package ratelog is a slog.Handler wrapper that keeps the daemon's log
// readable under load: warnings and errors are rate-limited per kind (the
// message and the values of a few discriminating attributes), the rest of a
// burst summed up in one line ("… 2,999 more in the last 10s"), and every
// line is bounded in length.
//
// Records below Warn pass unlimited (they are off by default in
// production). Within one window of a kind, the first Burst records pass;
// the others are counted, and when the window closes one summary record of
// that kind says how many were dropped. Flush writes the summaries still
// pending (at shutdown).
package ratelog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultWindow  = 10 * time.Second
	DefaultBurst   = 5
	DefaultMaxAttr = 512
)

// Options tune a Handler; zero fields take the defaults.
type Options struct {
	Window  time.Duration // the period of a kind's budget (DefaultWindow)
	Burst   int           // records of a kind that pass per window (DefaultBurst)
	MaxAttr int           // bytes of a message or a string value kept (DefaultMaxAttr)
}

// kindKeys are the attributes whose values tell kinds with one message
// apart (a refused create is not a refused unlink).
var kindKeys = []string{"op", "errno", "file", "kind", "tier"}

// Handler wraps another handler; see the package comment.
type Handler struct {
	next  slog.Handler
	state *state
	attrs []slog.Attr // attributes added by WithAttrs, for the kind
}

// state is shared by a Handler and the handlers derived from it.
type state struct {
	opts Options
	mu   sync.Mutex
	seen map[string]*kind
}

// kind is one kind's current window.
type kind struct {
	start   time.Time
	passed  int
	dropped int
	last    slog.Record  // the last dropped record, for the summary
	next    slog.Handler // the handler it would have gone to
	timer   *time.Timer
}

// New wraps next.
func New(next slog.Handler, o Options) *Handler {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.MaxAttr <= 0 {
		o.MaxAttr = DefaultMaxAttr
	}
	return &Handler{next: next, state: &state{opts: o, seen: map[string]*kind{}}}
}

// Enabled reports whether the wrapped handler takes level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// WithAttrs derives a handler that shares the rate limits.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clipped := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clipped[i] = h.state.clipAttr(a)
	}
	return &Handler{next: h.next.WithAttrs(clipped), state: h.state, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], clipped...)}
}

// WithGroup derives a handler that shares the rate limits.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), state: h.state, attrs: h.attrs}
}

// Handle passes r on, clipped, unless its kind spent its budget.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	r = h.state.clip(r)
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	if !h.state.admit(h.kindOf(r), r, h.next) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

// Flush writes the summaries of the kinds that dropped records in their
// current window.
func (h *Handler) Flush() {
	s := h.state
	s.mu.Lock()
	var due []*kind
	for key, k := range s.seen {
		if k.timer != nil {
			k.timer.Stop()
		}
		if k.dropped > 0 {
			due = append(due, k)
		}
		delete(s.seen, key)
	}
	s.mu.Unlock()
	for _, k := range due {
		s.summary(k, time.Since(k.start))
	}
}

// kindOf names r's kind: level, message and the discriminating values.
func (h *Handler) kindOf(r slog.Record) string {
	var b strings.Builder
	b.WriteString(r.Level.String())
	b.WriteByte('|')
	b.WriteString(r.Message)
	add := func(a slog.Attr) {
		for _, k := range kindKeys {
			if a.Key == k {
				b.WriteByte('|')
				b.WriteString(a.Value.String())
			}
		}
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(func(a slog.Attr) bool { add(a); return true })
	return b.String()
}

// admit reports whether a record of kind key passes, counting it when not.
func (s *state) admit(key string, r slog.Record, next slog.Handler) bool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.seen[key]
	if k == nil || now.Sub(k.start) >= s.opts.Window && k.dropped == 0 {
		s.seen[key] = &kind{start: now, passed: 1}
		return true
	}
	if k.passed < s.opts.Burst {
		k.passed++
		return true
	}
	k.dropped++
	k.last, k.next = r.Clone(), next
	if k.timer == nil {
		k.timer = time.AfterFunc(time.Until(k.start.Add(s.opts.Window)), func() { s.close(key, k) })
	}
	return false
}

// close ends k's window: its summary, and a fresh budget.
func (s *state) close(key string, k *kind) {
	s.mu.Lock()
	if s.seen[key] != k {
		s.mu.Unlock()
		return
	}
	delete(s.seen, key)
	s.mu.Unlock()
	s.summary(k, s.opts.Window)
}

// summary writes one record for k's dropped records: the last one, its
// message followed by the count.
func (s *state) summary(k *kind, over time.Duration) {
	r := slog.NewRecord(time.Now(), k.last.Level,
		fmt.Sprintf("%s (… %s more in the last %v)", k.last.Message, thousands(k.dropped), over.Round(time.Second)), 0)
	k.last.Attrs(func(a slog.Attr) bool { r.AddAttrs(a); return true })
	r.AddAttrs(slog.Int("dropped", k.dropped))
	k.next.Handle(context.Background(), r)
}

// clip bounds r's message and string attributes.
func (s *state) clip(r slog.Record) slog.Record {
	out := slog.NewRecord(r.Time, r.Level, clipString(r.Message, s.opts.MaxAttr), r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(s.clipAttr(a)); return true })
	return out
}

// clipAttr bounds a's value when it is a string, an error or a Stringer.
func (s *state) clipAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if len(v.String()) > s.opts.MaxAttr {
			return slog.String(a.Key, clipString(v.String(), s.opts.MaxAttr))
		}
	case slog.KindAny:
		if str := fmt.Sprint(v.Any()); len(str) > s.opts.MaxAttr {
			return slog.String(a.Key, clipString(str, s.opts.MaxAttr))
		}
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, ga := range g {
			out[i] = s.clipAttr(ga)
		}
		return slog.Group(a.Key, out...)
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// clipString cuts str to max bytes, saying how much was cut.
func clipString(str string, max int) string {
	if len(str) <= max {
		return str
	}
	return fmt.Sprintf("%s… (%d bytes cut)", str[:max], len(str)-max)
}

// thousands formats n with commas: 2,999.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
