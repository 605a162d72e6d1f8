package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	domaindelivery "github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
)

// Issue 33, finding 1: a rebuild of the reconciliation projection from a
// history holding a subscription_disabled event recorded before the
// redaction (whole URL, receiver's error) writes the redacted item.
func TestRebuildRedactsOldSubscriptionItems(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(ctx, db)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	sub := uuid.NewString()
	old := payment.Flagged{Meta: payment.Meta{PaymentKey: sub, OccurredAt: time.Now().UTC()},
		Kind: payment.ReconSubscriptionDisabled, Key: sub,
		Details: "push subscription to https://u:SECRET@hooks.example.com/services/T/B/SECRET disabled after its retry schedule: HTTP 500 SECRET; re-enable it once the endpoint answers"}
	typ, data, err := payment.Encode(old)
	require.NoError(t, err)
	_, err = postgres.NewEventStore(pool).Append(ctx, domaindelivery.SubscriptionStream(sub), eventstore.NoStream,
		[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: data}})
	require.NoError(t, err)

	g := &globals{ctx: ctx, log: slog.New(slog.DiscardHandler), cli: &cli{DatabaseURL: db, EventStore: "postgres"}}
	require.NoError(t, (&rebuildCmd{Names: []string{"reconciliation"}, SwapAll: true, BatchSize: 100}).Run(g))
	var details string
	require.NoError(t, pool.QueryRow(ctx, `SELECT details FROM reconciliation_items WHERE item_key = $1`, sub).Scan(&details))
	assert.Equal(t, payment.SubscriptionDisabledDetails(sub, "hooks.example.com"), details)
	assert.NotContains(t, details, "SECRET")
}
