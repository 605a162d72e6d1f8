package operations_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// Many registrations of one reference at once record one expectation; many
// captures seen at once pay it once; its overdue item is resolvable by an
// operator like any item.
func TestExpectationsConcurrentRegisterAndCapture(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			store := open(t)
			now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			ops := operations.NewExpectations(store, func() time.Time { return now })
			cmd := expectation.RegisterCommand{Provider: "wechatpay", Reference: "ORDER-9", Amount: 2500, Currency: "CNY",
				ExpiresAt: now.Add(time.Hour), Actor: "shop"}
			var wg sync.WaitGroup
			var mu sync.Mutex
			created := 0
			for range 8 {
				wg.Go(func() {
					x, c, err := ops.Register(ctx, cmd)
					assert.NoError(t, err)
					assert.Equal(t, expectation.IDOf("wechatpay", "ORDER-9"), x.ID)
					mu.Lock()
					if c {
						created++
					}
					mu.Unlock()
				})
			}
			wg.Wait()
			assert.Equal(t, 1, created)
			id := expectation.IDOf("wechatpay", "ORDER-9")
			changed := cmd
			changed.Amount = 2600
			_, _, err := ops.Register(ctx, changed)
			require.ErrorIs(t, err, expectation.ErrConflict)

			ok, err := ops.Clock(ctx, id, now.Add(2*time.Hour))
			require.NoError(t, err)
			assert.True(t, ok)

			paid := 0
			for range 8 {
				wg.Go(func() {
					ok, err := ops.Capture(ctx, id, expectation.CaptureSeen{PaymentStream: "payment-wechatpay-42", CaptureID: "42",
						Amount: 2500, Currency: "CNY", At: now.Add(3 * time.Hour)})
					assert.NoError(t, err)
					if ok {
						mu.Lock()
						paid++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			assert.Equal(t, 1, paid)
			x, err := ops.Get(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, expectation.StatusPaid, x.Status)
			assert.True(t, x.Late)
			require.Len(t, x.Items, 1)
			assert.False(t, x.Items[0].Open, "the late capture resolved payment_overdue")
			recs, err := store.ReadStream(ctx, expectation.StreamID(id))
			require.NoError(t, err)
			var types []string
			for _, r := range recs {
				types = append(types, r.Type)
			}
			assert.Equal(t, []string{expectation.TypeRegistered, expectation.TypeOverdue, payment.TypeFlagged,
				expectation.TypePaid, payment.TypeCleared}, types)

			// An operator reopens the item like any other: its stream decodes.
			rec := operations.NewReconciliation(store, func() time.Time { return now })
			_, err = rec.Reopen(ctx, operations.ItemAction{ID: views.ReconciliationID(expectation.StreamID(id), payment.ReconPaymentOverdue, id.String()),
				Actor: "ops", Note: "check the bank"})
			require.NoError(t, err)

			_, err = ops.Cancel(ctx, id, "shop", "")
			require.ErrorIs(t, err, expectation.ErrPaid)
		})
	}
}
