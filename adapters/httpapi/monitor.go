package httpapi

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/projections/views"
)

// StatusSource reads the projections' and the inbox's status
// (projections.StatusReader with Inbox set).
type StatusSource interface {
	Status(ctx context.Context) (views.Status, error)
}

// MonitorConfig configures a Monitor. Zero durations take the defaults.
type MonitorConfig struct {
	// Ready reports whether the service can take traffic (database
	// reachable, migrations applied, event store reachable); it returns a
	// *NotReady naming the dependency. nil = always ready.
	Ready func(ctx context.Context) error
	// Status reads the figures /metrics exports; nil = none.
	Status StatusSource
	// ReadyInterval is how often readiness is re-read (default 1s): a
	// database outage shows on /readyz within about that long.
	ReadyInterval time.Duration
	// StatusInterval is how often the status is re-read (default 5s).
	StatusInterval time.Duration
	// Timeout bounds one reading (default 3s), so that a hanging
	// dependency cannot freeze the figures.
	Timeout time.Duration
	Now     func() time.Time
}

// Monitor is the one background refresher behind /readyz and /metrics: Run
// reads readiness and the status on a schedule, on whatever connections
// its sources use (serve gives it a small pool of its own), and the
// endpoints answer from its last reading. A probe or a scrape therefore
// costs no query, cannot take a connection from ingestion, and however
// often it comes, the database sees at most one reading per interval.
type Monitor struct {
	cfg MonitorConfig

	mu        sync.RWMutex
	readyErr  error
	readyAt   time.Time
	status    views.Status
	statusErr error

	up, inbox, lagEvents, lagSeconds, lagCapped, position, errs, headPos *prometheus.Desc
}

var _ prometheus.Collector = (*Monitor)(nil)

// errNotReadYet is readiness before the first reading.
var errNotReadYet = &NotReady{Component: "service", Err: errors.New("starting: readiness not read yet")}

// NewMonitor returns a monitor; nothing is read until Run or Refresh.
func NewMonitor(cfg MonitorConfig) *Monitor {
	if cfg.ReadyInterval <= 0 {
		cfg.ReadyInterval = time.Second
	}
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	proj := []string{"projection"}
	return &Monitor{
		cfg:       cfg,
		readyErr:  errNotReadYet,
		statusErr: errors.New("status not read yet"),
		up: prometheus.NewDesc("onceledger_stats_up",
			"1 if the last background reading of the database statistics succeeded, 0 if it failed or timed out.", nil, nil),
		inbox: prometheus.NewDesc("onceledger_inbox_rows",
			"webhook_inbox rows by status.", []string{"status"}, nil),
		lagEvents: prometheus.NewDesc("onceledger_projection_lag_events",
			"Events of the feed after the projection's checkpoint (at least this many when onceledger_projection_lag_capped is 1).", proj, nil),
		lagCapped: prometheus.NewDesc("onceledger_projection_lag_capped",
			"1 when the lag count stopped at its cap.", proj, nil),
		lagSeconds: prometheus.NewDesc("onceledger_projection_lag_seconds",
			"Age of the oldest event the projection has not applied; 0 when caught up.", proj, nil),
		position: prometheus.NewDesc("onceledger_projection_position",
			"Global sequence number (the prepare half of the feed position) of the last event the projection applied, as in /v1/projections.", proj, nil),
		errs: prometheus.NewDesc("onceledger_projection_errors",
			"1 when the projection stopped on an event it cannot apply (last_error set).", proj, nil),
		headPos: prometheus.NewDesc("onceledger_feed_head_position",
			"Global sequence number (prepare half) of the last event of the feed.", nil, nil),
	}
}

// Run reads readiness and the status now, then on their intervals, until
// ctx ends. The two readings run apart, so that a slow status reading
// never delays noticing that a dependency is down.
func (m *Monitor) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { every(ctx, m.cfg.StatusInterval, m.RefreshStatus) })
	every(ctx, m.cfg.ReadyInterval, m.RefreshReady)
	wg.Wait()
}

// every calls f now and then every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RefreshReady reads readiness once.
func (m *Monitor) RefreshReady(ctx context.Context) {
	var err error
	if m.cfg.Ready != nil {
		rctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
		err = m.cfg.Ready(rctx)
		cancel()
	}
	m.mu.Lock()
	m.readyErr, m.readyAt = err, m.cfg.Now()
	m.mu.Unlock()
}

// RefreshStatus reads the status once. A failed reading replaces the
// figures: /metrics then says stats_up 0 rather than repeat stale numbers.
func (m *Monitor) RefreshStatus(ctx context.Context) {
	if m.cfg.Status == nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	st, err := m.cfg.Status.Status(rctx)
	cancel()
	m.mu.Lock()
	m.status, m.statusErr = st, err
	m.mu.Unlock()
}

// ready is the last readiness reading. A reading older than a few
// intervals (the refresher stopped or hangs) is not trusted.
func (m *Monitor) ready() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.readyErr == nil && m.cfg.Now().Sub(m.readyAt) > 3*m.cfg.ReadyInterval+2*m.cfg.Timeout {
		return &NotReady{Component: "service", Err: errors.New("readiness reading is stale")}
	}
	return m.readyErr
}

// Describe implements prometheus.Collector.
func (m *Monitor) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.up, m.inbox, m.lagEvents, m.lagCapped, m.lagSeconds, m.position, m.errs, m.headPos} {
		ch <- d
	}
}

// Collect implements prometheus.Collector from the last reading: no query.
func (m *Monitor) Collect(ch chan<- prometheus.Metric) {
	if m.cfg.Status == nil {
		return
	}
	m.mu.RLock()
	st, err := m.status, m.statusErr
	m.mu.RUnlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if err != nil {
		gauge(m.up, 0)
		return
	}
	gauge(m.up, 1)
	for _, s := range views.InboxStatuses {
		gauge(m.inbox, float64(st.Inbox[s]), s)
	}
	for s, n := range st.Inbox {
		if !slices.Contains(views.InboxStatuses, s) {
			gauge(m.inbox, float64(n), s)
		}
	}
	for _, p := range st.Projections {
		gauge(m.lagEvents, float64(p.Lag), p.Name)
		gauge(m.lagCapped, boolGauge(p.LagCapped), p.Name)
		gauge(m.lagSeconds, p.LagSeconds, p.Name)
		gauge(m.position, float64(p.Position.Prepare), p.Name)
		gauge(m.errs, boolGauge(p.LastError != ""), p.Name)
	}
	gauge(m.headPos, float64(st.Head.Prepare))
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
