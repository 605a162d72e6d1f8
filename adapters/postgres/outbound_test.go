package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// A relay's checkpoint starts at the start, survives a new instance, and
// never moves back.
func TestOutboundCheckpoint(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	cp := postgres.NewOutboundCheckpoint(pool, "nats")
	at, err := cp.Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, eventstore.Start, at)
	require.NoError(t, cp.Save(ctx, eventstore.Position{Commit: 10, Prepare: 3}))
	require.NoError(t, cp.Save(ctx, eventstore.Position{Commit: 9, Prepare: 99}))
	at, err = postgres.NewOutboundCheckpoint(pool, "nats").Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, eventstore.Position{Commit: 10, Prepare: 3}, at)
	other, err := postgres.NewOutboundCheckpoint(pool, "other").Load(ctx)
	require.NoError(t, err)
	assert.Equal(t, eventstore.Start, other)
}
