package operations_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

func TestResolveIsOneEventWhateverTheRace(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			store := open(t)
			stream := "payment-stripe-pi_" + uuid.NewString()
			typ, data, err := payment.Encode(payment.Flagged{
				Meta: payment.Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1", OccurredAt: time.Now()},
				Kind: payment.ReconRefundBeforePayment, Key: "re_1", Details: "refund before payment"})
			require.NoError(t, err)
			_, err = store.Append(ctx, stream, eventstore.ExpectFor(0), []eventstore.EventData{{ID: uuid.New(), Type: typ, Data: data}})
			require.NoError(t, err)
			now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			ops := operations.NewReconciliation(store, func() time.Time { return now })
			id := views.ReconciliationID(stream, payment.ReconRefundBeforePayment, "re_1")

			_, err = ops.Resolve(ctx, operations.ItemAction{ID: views.ReconciliationID(stream, payment.ReconOverRefund, "re_1"), Actor: "ops", Note: "n"})
			assert.ErrorIs(t, err, payment.ErrItemNotFound)
			_, err = ops.Resolve(ctx, operations.ItemAction{ID: "payment-stripe-nobody/over_refund/x", Actor: "ops", Note: "n"})
			assert.ErrorIs(t, err, payment.ErrItemNotFound)
			_, err = ops.Resolve(ctx, operations.ItemAction{ID: "garbage", Actor: "ops", Note: "n"})
			assert.ErrorIs(t, err, payment.ErrItemNotFound)

			// Many operators resolve the same item at once: one wins, the
			// others are told it is resolved; the stream holds one action.
			const n = 16
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					_, errs[i] = ops.Resolve(ctx, operations.ItemAction{ID: id, Actor: fmt.Sprintf("op%d", i), Note: "done"})
				})
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case errors.Is(err, payment.ErrItemResolved), errors.Is(err, operations.ErrContention):
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}
			assert.Equal(t, 1, won)

			reo, err := ops.Reopen(ctx, operations.ItemAction{ID: id, Actor: "bob", Note: "not yet"})
			require.NoError(t, err)
			assert.Equal(t, payment.Reopened{Meta: payment.Meta{Provider: "stripe", PaymentKey: "pi_1", OccurredAt: now},
				Kind: payment.ReconRefundBeforePayment, Key: "re_1", Actor: "bob", Note: "not yet"}, reo)

			recs, err := store.ReadStream(ctx, stream)
			require.NoError(t, err)
			var types []string
			for _, r := range recs {
				types = append(types, r.Type)
			}
			assert.Equal(t, []string{payment.TypeFlagged, payment.TypeResolved, payment.TypeReopened}, types)
		})
	}
}
