package operations_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
)

// Issue 33, finding 1: the item a disabled subscription opens, as stored
// in history, names the subscription and the URL's host only, never the
// URL's path, query or user info, nor the receiver's answer.
func TestSubscriptionDisabledItemNamesTheHostOnly(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			store := open(t)
			ops := operations.NewReconciliation(store, func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) })
			sub := uuid.New()
			require.NoError(t, ops.OpenSubscriptionDisabled(ctx, sub, "https://user:SECRET@hooks.example.com/services/T/B/SECRET?api_key=SECRET"))
			recs, err := store.ReadStream(ctx, delivery.SubscriptionStream(sub.String()))
			require.NoError(t, err)
			require.Len(t, recs, 1)
			assert.NotContains(t, string(recs[0].Data), "SECRET")
			ev, err := payment.Decode(recs[0].Type, recs[0].Data)
			require.NoError(t, err)
			assert.Equal(t, payment.SubscriptionDisabledDetails(sub.String(), "hooks.example.com"), ev.(payment.Flagged).Details)
		})
	}
}
