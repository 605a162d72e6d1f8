package postgres

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// InboxStatuses are the webhook_inbox statuses (the table's CHECK). The
// collector reports each of them, with 0 when no row has it, so that a
// status that empties out shows 0 instead of vanishing from the scrape.
var InboxStatuses = []string{"received", "applied", "ignored", "unverified", "invalid"}

// statsTimeout bounds one scrape's queries: a slow database must not make
// /metrics hang; the scrape then reports onceledger_stats_up 0.
const statsTimeout = 2 * time.Second

// ProjectionStats is how far one projection is behind the Postgres feed.
type ProjectionStats struct {
	Name     string
	Position eventstore.Position
	Status   string
	// LagEvents counts the feed's events after the checkpoint that readers
	// can see now (the visibility rule of ReadAll).
	LagEvents int64
	// LagSeconds is the age of the oldest of those events (0 when caught
	// up): how stale the read model is.
	LagSeconds float64
	LastError  string
}

// Stats is one reading of the numbers the collector exports.
type Stats struct {
	Inbox       map[string]int64 // webhook_inbox rows by status
	Projections []ProjectionStats
}

// ReadStats reads the inbox counts and each projection's lag. The lag is
// counted on the Postgres events table: with another event store it reads
// 0 (use projections.Status, which reads the configured feed, instead).
func ReadStats(ctx context.Context, pool *pgxpool.Pool) (Stats, error) {
	st := Stats{Inbox: map[string]int64{}}
	rows, err := pool.Query(ctx, `SELECT status, count(*) FROM webhook_inbox GROUP BY status`)
	if err != nil {
		return st, qwrap("inbox counts", err)
	}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			rows.Close()
			return st, qwrap("inbox counts", err)
		}
		st.Inbox[s] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, qwrap("inbox counts", err)
	}

	// Every committed event after the checkpoint is lag, including events
	// the feed does not hand out yet because an older transaction is still
	// open: a projection held back that way is behind, and must say so.
	rows, err = pool.Query(ctx, `
		SELECT c.name, c.position_commit, c.position_prepare, c.status, coalesce(c.last_error, ''),
			lag.n, coalesce(greatest(extract(epoch FROM now() - lag.oldest), 0), 0)::float8
		FROM projection_checkpoints c
		CROSS JOIN LATERAL (
			SELECT count(*) AS n, min(e.recorded_at) AS oldest FROM events e
			WHERE (e.tx_id, e.global_position) > (c.position_commit, c.position_prepare)) lag
		ORDER BY c.name COLLATE "C"`)
	if err != nil {
		return st, qwrap("projection lag", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p ProjectionStats
		var commit, prepare int64
		if err := rows.Scan(&p.Name, &commit, &prepare, &p.Status, &p.LastError, &p.LagEvents, &p.LagSeconds); err != nil {
			return st, qwrap("projection lag", err)
		}
		p.Position = eventstore.Position{Commit: uint64(commit), Prepare: uint64(prepare)}
		st.Projections = append(st.Projections, p)
	}
	if err := rows.Err(); err != nil {
		return st, qwrap("projection lag", err)
	}
	return st, nil
}

// StatsCollector exports database-derived gauges, read at scrape time:
// inbox rows by status, and each projection's position, lag and error
// state. A failed reading does not fail the scrape: it sets
// onceledger_stats_up to 0 and omits what it could not read.
type StatsCollector struct {
	pool *pgxpool.Pool
	head func(context.Context) (eventstore.Position, error)

	up, inbox, lagEvents, lagSeconds, position, errs, headPos *prometheus.Desc
}

var _ prometheus.Collector = (*StatsCollector)(nil)

// NewStatsCollector returns the collector over pool. head, when not nil,
// reads the configured event store's head, exported as
// onceledger_feed_head_position (and a failure of it as stats_up 0).
func NewStatsCollector(pool *pgxpool.Pool, head func(context.Context) (eventstore.Position, error)) *StatsCollector {
	proj := []string{"projection"}
	return &StatsCollector{
		pool: pool,
		head: head,
		up: prometheus.NewDesc("onceledger_stats_up",
			"1 if the last scrape read the database statistics, 0 if it failed or timed out.", nil, nil),
		inbox: prometheus.NewDesc("onceledger_inbox_rows",
			"webhook_inbox rows by status.", []string{"status"}, nil),
		lagEvents: prometheus.NewDesc("onceledger_projection_lag_events",
			"Events of the feed after the projection's checkpoint.", proj, nil),
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

// Describe implements prometheus.Collector.
func (c *StatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.inbox, c.lagEvents, c.lagSeconds, c.position, c.errs, c.headPos} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *StatsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	up := 1.0
	st, err := ReadStats(ctx, c.pool)
	if err != nil {
		up = 0
	} else {
		for _, s := range knownAnd(st.Inbox) {
			ch <- prometheus.MustNewConstMetric(c.inbox, prometheus.GaugeValue, float64(st.Inbox[s]), s)
		}
		for _, p := range st.Projections {
			ch <- prometheus.MustNewConstMetric(c.lagEvents, prometheus.GaugeValue, float64(p.LagEvents), p.Name)
			ch <- prometheus.MustNewConstMetric(c.lagSeconds, prometheus.GaugeValue, p.LagSeconds, p.Name)
			ch <- prometheus.MustNewConstMetric(c.position, prometheus.GaugeValue, float64(p.Position.Prepare), p.Name)
			stopped := 0.0
			if p.LastError != "" {
				stopped = 1
			}
			ch <- prometheus.MustNewConstMetric(c.errs, prometheus.GaugeValue, stopped, p.Name)
		}
	}
	if c.head != nil {
		if h, err := c.head(ctx); err != nil {
			up = 0
		} else {
			ch <- prometheus.MustNewConstMetric(c.headPos, prometheus.GaugeValue, float64(h.Prepare))
		}
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}

// knownAnd returns the known inbox statuses followed by any other status
// found in counts, sorted.
func knownAnd(counts map[string]int64) []string {
	out := append([]string(nil), InboxStatuses...)
	var extra []string
	for s := range counts {
		if !slices.Contains(InboxStatuses, s) {
			extra = append(extra, s)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

// RebuildProgress is a rebuild's progress, per projection. `onceledger
// rebuild` runs in its own process, so these gauges are only scraped when
// that process registers them (NewRebuildProgress with a registry); without
// one they are updated and simply not exported.
type RebuildProgress struct {
	Done  *prometheus.GaugeVec // events replayed so far
	Total *prometheus.GaugeVec // events to replay (the head when the rebuild started)
}

// NewRebuildProgress creates the gauges and registers them with reg if it
// is not nil.
func NewRebuildProgress(reg prometheus.Registerer) (*RebuildProgress, error) {
	p := &RebuildProgress{
		Done: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "onceledger_rebuild_events_done",
			Help: "Events a running rebuild has replayed into the shadow tables.",
		}, []string{"projection"}),
		Total: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "onceledger_rebuild_events_total",
			Help: "Events the running rebuild has to replay.",
		}, []string{"projection"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{p.Done, p.Total} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register rebuild progress: %w", err)
			}
		}
	}
	return p, nil
}
