package outbox_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/projections/outbound"
)

// Issue 33, finding 8: a from cursor beyond the feed's head is refused
// (400) on create and on replay; the head itself and earlier cursors are
// accepted.
func TestFromBeyondTheHeadRefused(t *testing.T) {
	ctx := testCtx(t)
	e := newPostgresEnv(t)
	e.capture(ctx, "pi_from_1", 1)
	h, err := e.store.Head(ctx)
	require.NoError(t, err)
	beyond := outbound.Cursor(eventstore.Position{Commit: h.Commit + 1_000_000, Prepare: h.Prepare + 1_000_000})
	_, err = e.svc.Create(ctx, outbox.NewSubscription{URL: "https://shop.example/h", From: beyond}, "ops", "")
	require.ErrorIs(t, err, outbox.ErrInvalid)
	assert.ErrorContains(t, err, "beyond the feed's head")

	c, err := e.svc.Create(ctx, outbox.NewSubscription{URL: "https://shop.example/h", From: outbound.Cursor(h)}, "ops", "")
	require.NoError(t, err, "the head itself")
	_, err = e.svc.Create(ctx, outbox.NewSubscription{URL: "https://shop.example/h", From: outbound.Cursor(eventstore.Start)}, "ops", "")
	require.NoError(t, err, "the start")

	_, err = e.svc.Replay(ctx, c.Subscription.ID, outbox.ReplayFrom{After: beyond}, "ops", "")
	require.ErrorIs(t, err, outbox.ErrInvalid)
	assert.ErrorContains(t, err, "beyond the feed's head")
	_, err = e.svc.Replay(ctx, c.Subscription.ID, outbox.ReplayFrom{After: outbound.Cursor(eventstore.Start)}, "ops", "")
	require.NoError(t, err)
}
