package store

import "time"

// Observer takes one measurement, in seconds. A Prometheus histogram is
// one; package metrics installs them, so the store needs no metrics
// library.
type Observer interface {
	Observe(seconds float64)
}

// Latency holds an Observer for each kind of timed control request.
type Latency struct {
	Lookup Observer // a lookup request
	Flush  Observer // a flush request, until durable
	Load   Observer // a GPU load request
	Dump   Observer // a GPU dump request
	TopK   Observer // a topk request
}

// nobody is the Observer that keeps nothing.
type nobody struct{}

func (nobody) Observe(float64) {}

func (l *Latency) setDefaults() {
	for _, o := range []*Observer{&l.Lookup, &l.Flush, &l.Load, &l.Dump, &l.TopK} {
		if *o == nil {
			*o = nobody{}
		}
	}
}

// ObserveSince records the time since start in o.
func ObserveSince(o Observer, start time.Time) {
	o.Observe(time.Since(start).Seconds())
}
