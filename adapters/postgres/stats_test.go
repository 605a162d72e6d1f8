package postgres_test

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres"
)

// gather scrapes reg and returns every sample as "name{k=v,...}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			key := mf.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func TestRebuildProgressGauges(t *testing.T) {
	// Without a registry the gauges work and are simply not exported.
	p, err := postgres.NewRebuildProgress(nil)
	require.NoError(t, err)
	p.Done.WithLabelValues("ledger").Set(5)

	reg := prometheus.NewRegistry()
	p, err = postgres.NewRebuildProgress(reg)
	require.NoError(t, err)
	p.Total.WithLabelValues("ledger").Set(100)
	p.Done.WithLabelValues("ledger").Add(40)
	got := gather(t, reg)
	require.Equal(t, 100.0, got["onceledger_rebuild_events_total{projection=ledger}"])
	require.Equal(t, 40.0, got["onceledger_rebuild_events_done{projection=ledger}"])

	_, err = postgres.NewRebuildProgress(reg)
	var already prometheus.AlreadyRegisteredError
	require.True(t, errors.As(err, &already), "second registration: %v", err)
}
