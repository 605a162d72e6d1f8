package postgres

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

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
