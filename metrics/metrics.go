// Package metrics exports a mount's counters and latencies in the
// Prometheus text format, and is the only package that imports the
// Prometheus client. Counters and gauges are read at each scrape from the
// same snapshot as .ucm/stats (store.Store.Snapshot): there is no second
// bookkeeping. Only latencies are observed as they happen, into the
// histograms New installs in the store (store.Latency). docs/control.md
// lists every metric.
package metrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/ucmfs/ucmfs/store"
)

// Metrics are the metrics of one mount.
type Metrics struct {
	st                              *store.Store
	lookup, flush, load, dump, topk prometheus.Histogram
}

// latencyBuckets run from 10µs to about 40s, by factors of 4.
var latencyBuckets = prometheus.ExponentialBuckets(10e-6, 4, 12)

// New makes the latency histograms of st's mount and installs them as the
// store's observers.
func New(st *store.Store) *Metrics {
	h := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "ucm", Name: name, Help: help, Buckets: latencyBuckets,
		})
	}
	m := &Metrics{
		st:     st,
		lookup: h("lookup_seconds", "Time to answer one lookup request (exists or prefix)."),
		flush:  h("flush_seconds", "Time to answer one flush request: until the blocks are durable."),
		load:   h("load_seconds", "Time to answer one GPU load request: until the bytes are in GPU memory."),
		dump:   h("dump_seconds", "Time to answer one GPU dump request: until the blocks are published."),
		topk:   h("topk_seconds", "Time to answer one topk request: gathering the sidecars and ranking."),
	}
	st.Latency = store.Latency{Lookup: m.lookup, Flush: m.flush, Load: m.load, Dump: m.dump, TopK: m.topk}
	return m
}

// Handler serves the mount's metrics in the Prometheus text format, with
// the Go runtime's and the process's (go_, process_).
func (m *Metrics) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(statsCollector{st: m.st}, m.lookup, m.flush, m.load, m.dump, m.topk,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// statsCollector turns a store.Stats snapshot into metrics at each scrape.
type statsCollector struct{ st *store.Store }

// metricDef is one metric read from the snapshot.
type metricDef struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(*store.Stats) int64
}

// tierMetricDef is one metric per tier, labelled tier (its name) and
// level (its position: 0 memory, then the directory tiers in order).
type tierMetricDef struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(*store.TierStats) int64
}

func counter(name, help string, val func(*store.Stats) int64) metricDef {
	return metricDef{prometheus.NewDesc("ucm_"+name, help, nil, nil), prometheus.CounterValue, val}
}

func gauge(name, help string, val func(*store.Stats) int64) metricDef {
	return metricDef{prometheus.NewDesc("ucm_"+name, help, nil, nil), prometheus.GaugeValue, val}
}

func tierMetric(name, help string, typ prometheus.ValueType, val func(*store.TierStats) int64) tierMetricDef {
	return tierMetricDef{prometheus.NewDesc("ucm_tier_"+name, help, []string{"tier", "level"}, nil), typ, val}
}

// tierHealth is 1 for the state a tier is in and 0 for the others.
var tierHealth = prometheus.NewDesc("ucm_tier_health", "Health of a tier: 1 for its current state (up, unstable, down).",
	[]string{"tier", "level", "state"}, nil)

// healthStates are the states tierHealth reports.
var healthStates = store.TierHealthStates

var mountMetricDefs = []metricDef{
	counter("memory_hits_total", "Opens of blocks found in the memory tier.", func(m *store.Stats) int64 { return m.MemHits }),
	counter("lower_hits_total", "Opens of blocks found on a directory tier only.", func(m *store.Stats) int64 { return m.LowerHits }),
	counter("misses_total", "Opens of blocks no tier held.", func(m *store.Stats) int64 { return m.Misses }),
	counter("published_total", "Blocks and sidecars published.", func(m *store.Stats) int64 { return m.Published }),
	counter("published_bytes_total", "Bytes of the files published.", func(m *store.Stats) int64 { return m.BytesIn }),
	counter("rejected_writes_total", "Writes rejected at close (invalid file).", func(m *store.Stats) int64 { return m.Rejected }),
	counter("duplicate_writes_total", "Writes of an id already published (one copy kept).", func(m *store.Stats) int64 { return m.Duplicates }),
	counter("copied_bytes_total", "Bytes copied between tiers (write-back, promotion, demotion).", func(m *store.Stats) int64 { return m.BytesOut }),
	counter("promotions_total", "Blocks copied up into the memory tier.", func(m *store.Stats) int64 { return m.Promotions }),
	counter("evictions_total", "Clean blocks evicted from the memory tier.", func(m *store.Stats) int64 { return m.Evictions }),
	counter("demotions_total", "Blocks moved down to the next directory tier.", func(m *store.Stats) int64 { return m.Demotions }),
	counter("drops_total", "Blocks dropped from the last tier.", func(m *store.Stats) int64 { return m.Drops }),
	counter("write_backs_total", "Dirty blocks written back to a directory tier.", func(m *store.Stats) int64 { return m.WriteBacks }),
	counter("write_back_errors_total", "Failed write-backs (retried).", func(m *store.Stats) int64 { return m.WriteBackErrors }),
	counter("direct_writes_total", "Blocks published straight to a directory tier (memory full, or an O_DIRECT file staged there).", func(m *store.Stats) int64 { return m.DirectWrites }),
	counter("room_waits_total", "Publishes that waited for memory room.", func(m *store.Stats) int64 { return m.RoomWaits }),
	counter("crc_errors_total", "CRC-32C mismatches found.", func(m *store.Stats) int64 { return m.CRCErrors }),
	counter("quarantined_total", "Corrupt files taken out of a tier.", func(m *store.Stats) int64 { return m.Quarantined }),
	gauge("write_back_queue_blocks", "Dirty blocks waiting for write-back.", func(m *store.Stats) int64 { return int64(m.FlushQueue) }),
	gauge("dirty_bytes", "Bytes in the memory tier not yet on a directory tier.", func(m *store.Stats) int64 { return m.DirtyBytes }),
	gauge("dirty_files", "Files in the memory tier not yet on a directory tier.", func(m *store.Stats) int64 { return m.DirtyFiles }),
	counter("dirty_throttles_total", "Publishes that waited at the dirty limit.", func(m *store.Stats) int64 { return m.Throttles }),
	counter("memory_full_total", "ENOSPC from the memory tier's filesystem while its capacity showed room.", func(m *store.Stats) int64 { return m.MemFull }),
	counter("lookup_requests_total", "Lookup requests answered ok.", func(m *store.Stats) int64 { return m.Lookups }),
	counter("lookup_ids_total", "Ids looked up through .ucm/lookup.", func(m *store.Stats) int64 { return m.LookupIDs }),
	counter("lookup_hits_total", "Looked-up ids found present.", func(m *store.Stats) int64 { return m.LookupHits }),
	counter("lookup_misses_total", "Looked-up ids found absent.", func(m *store.Stats) int64 { return m.LookupIDs - m.LookupHits }),
	counter("prefetch_requests_total", "Prefetch requests.", func(m *store.Stats) int64 { return m.Prefetches }),
	counter("prefetch_queued_total", "Ids queued for promotion.", func(m *store.Stats) int64 { return m.PrefetchQueued }),
	counter("prefetch_missing_total", "Prefetched ids no tier held.", func(m *store.Stats) int64 { return m.PrefetchMissing }),
	counter("prefetch_promoted_total", "Prefetch promotions done.", func(m *store.Stats) int64 { return m.PrefetchPromoted }),
	counter("prefetch_failed_total", "Prefetch promotions that failed.", func(m *store.Stats) int64 { return m.PrefetchFailed }),
	gauge("light_nodes", "Published files the kernel holds looked up as light nodes.", func(m *store.Stats) int64 { return m.LightNodes }),
	gauge("prefetch_pending", "Prefetch promotions queued or running.", func(m *store.Stats) int64 { return m.PrefetchPending }),
	counter("flush_requests_total", "Flush requests.", func(m *store.Stats) int64 { return m.Flushes }),
	counter("flush_errors_total", "Flush requests that failed.", func(m *store.Stats) int64 { return m.FlushErrors }),
	counter("control_errors_total", "Control requests answered err.", func(m *store.Stats) int64 { return m.ControlErrors }),
	gauge("gpu_regions", "GPU memory regions registered through .ucm/gpu now.", func(m *store.Stats) int64 { return m.GPURegions }),
	counter("gpu_load_requests_total", "GPU load requests answered ok.", func(m *store.Stats) int64 { return m.GPULoads }),
	counter("gpu_load_blocks_total", "Blocks (or layer ranges) loaded into GPU memory.", func(m *store.Stats) int64 { return m.GPULoadBlocks }),
	counter("gpu_load_bytes_total", "Bytes loaded into GPU memory.", func(m *store.Stats) int64 { return m.GPULoadBytes }),
	counter("gpu_load_unmapped_blocks_total", "Blocks loaded from a file instead of a registered memory-tier mapping.", func(m *store.Stats) int64 { return m.GPULoadUnmapped }),
	counter("gpu_dump_requests_total", "GPU dump requests answered ok.", func(m *store.Stats) int64 { return m.GPUDumps }),
	counter("gpu_dump_blocks_total", "Blocks published from GPU memory.", func(m *store.Stats) int64 { return m.GPUDumpBlocks }),
	counter("gpu_dump_existing_total", "Dumped ids that were already stored.", func(m *store.Stats) int64 { return m.GPUDumpExisting }),
	counter("gpu_dump_bytes_total", "Bytes of the blocks published from GPU memory.", func(m *store.Stats) int64 { return m.GPUDumpBytes }),
	counter("gpu_resets_total", "GPU contexts reset after a sticky error (the engines on that GPU register again).", gpuStat(func(g *store.GPUStats) int64 { return g.Resets })),
	gauge("gpu_fallback", "1 when --gpu auto fell back to the simulated device (.ucm/stats says why).", gpuStat(func(g *store.GPUStats) int64 { return boolInt(g.Fallback != "") })),
	gauge("gpu_contexts", "GPUs in use: those holding a context for a registered region.", gpuStat(func(g *store.GPUStats) int64 { return int64(len(g.Contexts)) })),
	gauge("gpu_batch_api", "1 when copies are submitted with cuMemcpyBatchAsync.", gpuStat(func(g *store.GPUStats) int64 { return boolInt(g.BatchAPI) })),
	gauge("gpu_read_only_register", "1 when memory-tier pages are registered with CU_MEMHOSTREGISTER_READ_ONLY.", gpuStat(func(g *store.GPUStats) int64 { return boolInt(g.ReadOnlyRegister) })),
	gauge("gpu_host_ranges", "Host ranges registered with the GPU device (memory-tier mappings, staging buffers).", gpuStat(func(g *store.GPUStats) int64 { return int64(g.HostRanges) })),
	gauge("gpu_host_bytes", "Bytes of the host ranges registered with the GPU device.", gpuStat(func(g *store.GPUStats) int64 { return g.HostBytes })),
	gauge("gpu_host_pending", "Host ranges recorded but not registered with the driver yet (no GPU in use).", gpuStat(func(g *store.GPUStats) int64 { return int64(g.HostPending) })),
	counter("repr_derived_total", "Sidecars derived from their block and stored.", func(m *store.Stats) int64 { return m.ReprDerived }),
	counter("topk_requests_total", "Topk requests answered ok.", func(m *store.Stats) int64 { return m.TopKs }),
	counter("topk_candidates_total", "Candidates of the topk requests answered ok.", func(m *store.Stats) int64 { return m.TopKCandidates }),
	counter("topk_missing_total", "Topk candidates reported missing.", func(m *store.Stats) int64 { return m.TopKMissing }),
	counter("topk_derived_total", "Topk candidates whose sidecar was derived for the request.", func(m *store.Stats) int64 { return m.TopKDerived }),
	counter("topk_reused_total", "Topk requests that reused their session's index.", func(m *store.Stats) int64 { return m.TopKReused }),
}

var tierMetricDefs = []tierMetricDef{
	tierMetric("capacity_bytes", "Capacity of a tier.", prometheus.GaugeValue, func(t *store.TierStats) int64 { return t.Capacity }),
	tierMetric("used_bytes", "Bytes a tier holds.", prometheus.GaugeValue, func(t *store.TierStats) int64 { return t.Used }),
	tierMetric("blocks", "Files a tier holds.", prometheus.GaugeValue, func(t *store.TierStats) int64 { return t.Blocks }),
	tierMetric("bytes_in_total", "Bytes of files clients published into a tier.", prometheus.CounterValue, func(t *store.TierStats) int64 { return t.BytesIn }),
	tierMetric("bytes_out_total", "Bytes of files clients opened for reading from a tier.", prometheus.CounterValue, func(t *store.TierStats) int64 { return t.BytesOut }),
}

// gpuStat reads a value of the device's stats, 0 without a device.
func gpuStat(val func(*store.GPUStats) int64) func(*store.Stats) int64 {
	return func(m *store.Stats) int64 {
		if m.GPU == nil {
			return 0
		}
		return val(m.GPU)
	}
}

// boolInt is 1 for true.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Describe sends every descriptor.
func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range mountMetricDefs {
		ch <- d.desc
	}
	for _, d := range tierMetricDefs {
		ch <- d.desc
	}
	ch <- tierHealth
}

// Collect takes one snapshot and sends every metric read from it.
func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.st.Snapshot()
	for _, d := range mountMetricDefs {
		ch <- prometheus.MustNewConstMetric(d.desc, d.typ, float64(d.val(&m)))
	}
	for i := range m.Tiers {
		t := &m.Tiers[i]
		level := strconv.Itoa(i)
		for _, d := range tierMetricDefs {
			ch <- prometheus.MustNewConstMetric(d.desc, d.typ, float64(d.val(t)), t.Name, level)
		}
		for _, state := range healthStates {
			v := 0.0
			if t.Health == state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(tierHealth, prometheus.GaugeValue, v, t.Name, level, state)
		}
	}
}
