package httpapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/projections/views"
)

// countingStatus is a status source that counts its readings; its figures
// are whatever the test last set.
type countingStatus struct {
	mu    sync.Mutex
	st    views.Status
	err   error
	reads atomic.Int64
}

func (c *countingStatus) Status(context.Context) (views.Status, error) {
	c.reads.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st, c.err
}

func (c *countingStatus) set(st views.Status, err error) {
	c.mu.Lock()
	c.st, c.err = st, err
	c.mu.Unlock()
}

func statusWithLag(lag int64, applied int64) views.Status {
	return views.Status{
		Head: eventstore.Position{Commit: 9, Prepare: 42},
		Projections: []views.ProjectionStatus{
			{Name: "ledger", Position: eventstore.Position{Commit: 7, Prepare: 40}, Status: "live", Lag: lag, LagSeconds: 1.5},
			{Name: "payments", Status: "stopped", Lag: 100, LagCapped: true, LastError: "poison"},
		},
		Inbox: map[string]int64{"applied": applied, "received": 1, "ignored": 0, "unverified": 0, "invalid": 0, "odd": 2},
	}
}

type monitored struct {
	srv     *httptest.Server
	monitor *httpapi.Monitor
}

func startMonitored(t *testing.T, cfg httpapi.MonitorConfig, token string) *monitored {
	t.Helper()
	m := httpapi.NewMonitor(cfg)
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Config{
		Monitor: m, MetricsToken: token, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	t.Cleanup(srv.Close)
	return &monitored{srv: srv, monitor: m}
}

// get GETs path with the bearer token (none when empty).
func (m *monitored) get(t *testing.T, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, m.srv.URL+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := m.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// scrape GETs /metrics and returns its samples as "name{labels}" -> value.
func (m *monitored) scrape(t *testing.T, token string) map[string]float64 {
	t.Helper()
	code, body := m.get(t, "/metrics", token)
	require.Equal(t, http.StatusOK, code, body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	out := map[string]float64{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "onceledger_") {
			continue
		}
		for _, s := range mf.GetMetric() {
			key := name
			if ls := s.GetLabel(); len(ls) > 0 {
				key += "{" + ls[0].GetName() + "=" + ls[0].GetValue() + "}"
			}
			if g := s.GetGauge(); g != nil {
				out[key] = g.GetValue()
			}
		}
	}
	return out
}

// A scrape reads the monitor's last reading: however many scrapes come,
// the status source is read only when the monitor refreshes.
func TestMetricsServeTheLastReadingWithoutReading(t *testing.T) {
	src := &countingStatus{}
	src.set(statusWithLag(3, 10), nil)
	m := startMonitored(t, httpapi.MonitorConfig{Status: src}, "")

	got := m.scrape(t, "")
	assert.Equal(t, 0.0, got["onceledger_stats_up"], "nothing read yet")
	assert.Zero(t, src.reads.Load())

	m.monitor.RefreshStatus(context.Background())
	require.Equal(t, int64(1), src.reads.Load())
	src.set(statusWithLag(7, 11), nil) // the database moves on
	for range 20 {
		got = m.scrape(t, "")
	}
	assert.Equal(t, int64(1), src.reads.Load(), "twenty scrapes, no reading")
	assert.Equal(t, 1.0, got["onceledger_stats_up"])
	assert.Equal(t, 3.0, got["onceledger_projection_lag_events{projection=ledger}"], "the cached figure")
	assert.Equal(t, 10.0, got["onceledger_inbox_rows{status=applied}"])
	assert.Equal(t, 0.0, got["onceledger_inbox_rows{status=unverified}"], "a status without rows is 0, not missing")
	assert.Equal(t, 2.0, got["onceledger_inbox_rows{status=odd}"])
	assert.Equal(t, 1.5, got["onceledger_projection_lag_seconds{projection=ledger}"])
	assert.Equal(t, 40.0, got["onceledger_projection_position{projection=ledger}"])
	assert.Equal(t, 0.0, got["onceledger_projection_errors{projection=ledger}"])
	assert.Equal(t, 1.0, got["onceledger_projection_errors{projection=payments}"])
	assert.Equal(t, 1.0, got["onceledger_projection_lag_capped{projection=payments}"])
	assert.Equal(t, 42.0, got["onceledger_feed_head_position"])

	m.monitor.RefreshStatus(context.Background())
	got = m.scrape(t, "")
	assert.Equal(t, 7.0, got["onceledger_projection_lag_events{projection=ledger}"], "the next reading")
	assert.Equal(t, 11.0, got["onceledger_inbox_rows{status=applied}"])

	// A failed reading: stats_up 0, and no stale figures.
	src.set(views.Status{}, eventstore.ErrUnavailable)
	m.monitor.RefreshStatus(context.Background())
	got = m.scrape(t, "")
	assert.Equal(t, 0.0, got["onceledger_stats_up"])
	assert.NotContains(t, got, "onceledger_projection_lag_events{projection=ledger}")
}

// Run refreshes on its own schedule; scrapes in between change nothing.
func TestMonitorRunRefreshes(t *testing.T) {
	src := &countingStatus{}
	src.set(statusWithLag(1, 1), nil)
	m := startMonitored(t, httpapi.MonitorConfig{Status: src, StatusInterval: 10 * time.Millisecond}, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.monitor.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	require.Eventually(t, func() bool {
		return m.scrape(t, "")["onceledger_stats_up"] == 1
	}, 10*time.Second, 5*time.Millisecond)
	src.set(statusWithLag(5, 1), nil)
	require.Eventually(t, func() bool {
		return m.scrape(t, "")["onceledger_projection_lag_events{projection=ledger}"] == 5
	}, 10*time.Second, 5*time.Millisecond)
}

// /readyz answers from the last readiness reading: a probe reads nothing.
func TestReadyzServesTheLastReading(t *testing.T) {
	var reads atomic.Int64
	var failing atomic.Bool
	ready := func(context.Context) error {
		reads.Add(1)
		if failing.Load() {
			return &httpapi.NotReady{Component: "database", Err: errors.New("dial tcp 10.0.0.7:5432: connection refused")}
		}
		return nil
	}
	m := startMonitored(t, httpapi.MonitorConfig{Ready: ready}, "")

	code, _ := m.get(t, "/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, code, "not read yet: not ready")

	m.monitor.RefreshReady(context.Background())
	for range 10 {
		code, _ = m.get(t, "/readyz", "")
		assert.Equal(t, http.StatusOK, code)
	}
	assert.Equal(t, int64(1), reads.Load(), "ten probes, one reading")

	failing.Store(true)
	m.monitor.RefreshReady(context.Background())
	code, body := m.get(t, "/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "database not ready")
	assert.NotContains(t, body, "10.0.0.7", "no connection details to unauthenticated callers")
}

// With ONCELEDGER_METRICS_TOKEN set, /metrics wants it as a bearer token.
func TestMetricsToken(t *testing.T) {
	const token = "metrics-secret-0123456789"
	m := startMonitored(t, httpapi.MonitorConfig{Status: &countingStatus{}}, token)
	for _, bad := range []string{"", "wrong", token + "x", token[:len(token)-1]} {
		code, _ := m.get(t, "/metrics", bad)
		assert.Equal(t, http.StatusUnauthorized, code, "token %q", bad)
	}
	code, body := m.get(t, "/metrics", token)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "onceledger_stats_up")
	code, _ = m.get(t, "/healthz", "")
	assert.Equal(t, http.StatusOK, code, "only /metrics is protected")

	open := startMonitored(t, httpapi.MonitorConfig{}, "")
	code, _ = open.get(t, "/metrics", "")
	assert.Equal(t, http.StatusOK, code, "no token configured: open")
}

var _ prometheus.Collector = (*httpapi.Monitor)(nil)
