package postgres_test

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres"
)

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
	n, err := testutil.GatherAndCount(reg, "onceledger_rebuild_events_total", "onceledger_rebuild_events_done")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, 100.0, testutil.ToFloat64(p.Total.WithLabelValues("ledger")))
	assert.Equal(t, 40.0, testutil.ToFloat64(p.Done.WithLabelValues("ledger")))

	_, err = postgres.NewRebuildProgress(reg)
	var already prometheus.AlreadyRegisteredError
	assert.True(t, errors.As(err, &already), "second registration: %v", err)
}
