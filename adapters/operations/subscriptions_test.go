package operations_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/outbound"
)

// A disabled subscription opens one item in its stream (twice disabled
// while open: still one), visible in the feed as reconciliation.opened;
// re-enabling resolves it with the actor and note, and resolving when
// none is open is nothing. Both event stores: the stream is in their
// global feeds.
func TestSubscriptionDisabledItem(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			store := open(t)
			ops := operations.NewReconciliation(store, func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) })
			sub := uuid.New()
			require.NoError(t, ops.CloseSubscriptionDisabled(ctx, sub, "ops", ""), "no item: nothing")
			require.NoError(t, ops.OpenSubscriptionDisabled(ctx, sub, "https://shop.example/h"))
			require.NoError(t, ops.OpenSubscriptionDisabled(ctx, sub, "https://shop.example/h"))
			recs, err := store.ReadStream(ctx, delivery.SubscriptionStream(sub.String()))
			require.NoError(t, err)
			require.Len(t, recs, 1)
			require.NoError(t, ops.CloseSubscriptionDisabled(ctx, sub, "alice", "endpoint fixed"))
			require.NoError(t, ops.CloseSubscriptionDisabled(ctx, sub, "alice", "again"))
			recs, err = store.ReadStream(ctx, delivery.SubscriptionStream(sub.String()))
			require.NoError(t, err)
			require.Len(t, recs, 2)
			ev, err := payment.Decode(recs[1].Type, recs[1].Data)
			require.NoError(t, err)
			res := ev.(payment.Resolved)
			assert.Equal(t, "alice", res.Actor)
			assert.Equal(t, "endpoint fixed", res.Note)

			var types []string
			// The Postgres feed shows a commit once every earlier
			// transaction in the cluster has ended (its horizon): another
			// package's open transaction can hide both events for a while,
			// so an empty read is "not yet", not "none".
			var all []eventstore.RecordedEvent
			for len(all) < 2 {
				all, err = store.(eventstore.Store).ReadAll(ctx, eventstore.Start, 100)
				require.NoError(t, err)
				require.NoError(t, ctx.Err(), "the feed never showed both events")
				if len(all) < 2 {
					time.Sleep(10 * time.Millisecond)
				}
			}
			for _, r := range all {
				e, err := outbound.FromRecorded(r)
				require.NoError(t, err)
				types = append(types, e.Type)
				assert.Equal(t, payment.ReconSubscriptionDisabled, e.Data["kind"])
			}
			assert.Equal(t, []string{outbound.ReconciliationOpened, outbound.ReconciliationResolved}, types)
		})
	}
}
