package main

import (
	"context"
	"encoding/hex"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/projections/outbound"
)

// The subscriptions commands as main runs them: add (needs the key),
// replay from a cursor or a time, remove; the actions are recorded with
// the cli: actor.
func TestSubscriptionsCommands(t *testing.T) {
	url := pgtest.NewDatabase(t)
	g := &globals{ctx: context.Background(), log: slog.New(slog.DiscardHandler),
		cli: &cli{DatabaseURL: url, EventStore: "postgres", ReportingTZ: "UTC"}}
	key := outboxFlags{SecretsKey: hex.EncodeToString(make([]byte, 32))}
	alice := actorFlag{Actor: "alice"}
	err := (&subscriptionsAddCmd{URL: "https://shop.example/h", actorFlag: alice}).Run(g)
	require.ErrorIs(t, err, outbox.ErrNoSecretsKey)
	err = (&subscriptionsAddCmd{URL: "https://shop.example/h", Type: []string{"payment.nope"}, actorFlag: alice, outboxFlags: key}).Run(g)
	require.ErrorIs(t, err, outbox.ErrInvalid)
	require.NoError(t, (&subscriptionsAddCmd{URL: "https://shop.example/h", Type: []string{"payment.captured,refund.succeeded"},
		actorFlag: alice, outboxFlags: key}).Run(g))
	require.NoError(t, (&subscriptionsListCmd{outboxFlags: key}).Run(g))

	pool, err := openPool(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var id string
	var types []string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT id::text, types FROM subscriptions`).Scan(&id, &types))
	assert.Equal(t, []string{"payment.captured", "refund.succeeded"}, types)
	require.NoError(t, (&subscriptionsReplayCmd{ID: id, From: "2026-01-01T00:00:00Z", actorFlag: alice, outboxFlags: key}).Run(g))
	require.NoError(t, (&subscriptionsReplayCmd{ID: id, From: outbound.Cursor(eventstore.Start), actorFlag: alice, outboxFlags: key}).Run(g), "from the start")
	require.Error(t, (&subscriptionsReplayCmd{ID: id, From: "not-a-cursor", actorFlag: alice, outboxFlags: key}).Run(g))
	require.NoError(t, (&subscriptionsRemoveCmd{ID: id, Note: "gone", actorFlag: alice, outboxFlags: key}).Run(g))
	require.ErrorIs(t, (&subscriptionsRemoveCmd{ID: id, actorFlag: alice, outboxFlags: key}).Run(g), outbox.ErrNotFound)

	rows, err := pool.Query(context.Background(), `SELECT action, actor FROM subscription_actions ORDER BY id`)
	require.NoError(t, err)
	var got []string
	for rows.Next() {
		var a, who string
		require.NoError(t, rows.Scan(&a, &who))
		got = append(got, a+" by "+who)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"created by cli:alice", "replay by cli:alice", "replay by cli:alice", "deleted by cli:alice"}, got)
}
