package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/ucmfs/ucmfs/tiers"
)

// lifecycle is the daemon's state as others see it: the service manager
// through sd_notify (notify.go) and probes through /healthz and /readyz on
// the metrics address.
//
//	/healthz  200 while the daemon serves HTTP at all (liveness)
//	/readyz   200 once the mount answers and no directory tier is down,
//	          503 before, during shutdown, or while a tier is down
type lifecycle struct {
	ready atomic.Bool
	stack *tiers.Stack // nil until the stack exists
	log   *slog.Logger
}

// markReady records that the mount answers and tells the service manager.
func (l *lifecycle) markReady() {
	l.ready.Store(true)
	notifyReady(l.log)
}

// markStopping records that a shutdown began and tells the service manager.
func (l *lifecycle) markStopping() {
	l.ready.Store(false)
	notifyStopping(l.log)
}

// register adds /healthz and /readyz to mux.
func (l *lifecycle) register(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if why := l.notReady(); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", why)
			return
		}
		fmt.Fprintln(w, "ready")
	})
}

// notReady says why the daemon is not ready, or "" when it is.
func (l *lifecycle) notReady() string {
	if l == nil || !l.ready.Load() || l.stack == nil {
		return "not mounted"
	}
	var down []string
	for _, t := range l.stack.Stats().Tiers {
		if t.Health == tiers.Down.String() {
			down = append(down, t.Name)
		}
	}
	if len(down) > 0 {
		return "tier down: " + strings.Join(down, ", ")
	}
	return ""
}
