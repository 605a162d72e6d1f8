package admission

import "github.com/prometheus/client_golang/prometheus"

// metrics are the admission's counters, their children bound once: the
// shedding path is the overload path and must stay cheap.
type metrics struct {
	shedVec    *prometheus.CounterVec
	shed       [numClasses][numReasons]prometheus.Counter
	refusedVec *prometheus.CounterVec
	refused    [numRefused]prometheus.Counter
	evictedVec *prometheus.CounterVec
	evicted    [numEvicted]prometheus.Counter
	collectors []prometheus.Collector
}

const (
	refusedPerAddress = iota
	refusedFull
	numRefused
)

const (
	evictedFresh = iota
	evictedIdle
	evictedServed
	evictedReading
	numEvicted
)

func newMetrics(c *Controller) *metrics {
	m := &metrics{
		shedVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceledger_admission_shed_total",
			Help: "Requests answered 503 or 429 with Retry-After before any work, by class (webhook, upload, read) and reason (in_flight, reserved_connections, long_polls, long_polls_per_token).",
		}, []string{"class", "reason"}),
		refusedVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceledger_admission_connections_refused_total",
			Help: "Connections closed at accept, by reason (per_address: ONCELEDGER_MAX_CONNECTIONS_PER_ADDRESS; full: every connection inside a handler).",
		}, []string{"reason"}),
		evictedVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceledger_admission_connections_evicted_total",
			Help: "Connections closed to make room for a new one at ONCELEDGER_MAX_CONNECTIONS, by state (fresh: no request yet; idle: between requests).",
		}, []string{"state"}),
	}
	for cl := Webhook; cl < numClasses; cl++ {
		for r := reason(0); r < numReasons; r++ {
			m.shed[cl][r] = m.shedVec.WithLabelValues(cl.String(), r.String())
		}
	}
	// Health is never shed; its counters exist only so that indexing by class is safe.
	for r := reason(0); r < numReasons; r++ {
		m.shed[Health][r] = prometheus.NewCounter(prometheus.CounterOpts{Name: "unused"})
	}
	m.refused[refusedPerAddress] = m.refusedVec.WithLabelValues("per_address")
	m.refused[refusedFull] = m.refusedVec.WithLabelValues("full")
	m.evicted[evictedFresh] = m.evictedVec.WithLabelValues("fresh")
	m.evicted[evictedIdle] = m.evictedVec.WithLabelValues("idle")
	m.evicted[evictedServed] = m.evictedVec.WithLabelValues("served")
	m.evicted[evictedReading] = m.evictedVec.WithLabelValues("reading")
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "onceledger_admission_connections",
		Help: "Connections open (ONCELEDGER_MAX_CONNECTIONS bounds them).",
	}, func() float64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return float64(c.conns.open)
	})
	polls := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "onceledger_admission_long_polls",
		Help: "Long polls of GET /v1/events waiting (ONCELEDGER_MAX_LONG_POLLS bounds them).",
	}, func() float64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return float64(c.polls)
	})
	m.collectors = []prometheus.Collector{m.shedVec, m.refusedVec, m.evictedVec, open, polls}
	for cl := Webhook; cl < numClasses; cl++ {
		m.collectors = append(m.collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "onceledger_admission_in_flight",
			Help:        "Requests doing work, by class (ONCELEDGER_MAX_IN_FLIGHT and the per-class caps bound them).",
			ConstLabels: prometheus.Labels{"class": cl.String()},
		}, func() float64 { return float64(c.gate.inFlight(cl)) }))
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer) {
	reg.MustRegister(m.collectors...)
}
