package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

type noRows struct{}

func (noRows) Payment(context.Context, string, string) (views.Payment, bool, error) {
	return views.Payment{}, false, nil
}

type oneStream []eventstore.RecordedEvent

func (s oneStream) ReadStream(context.Context, string) ([]eventstore.RecordedEvent, error) {
	return s, nil
}

func recorded(t *testing.T, evs ...payment.Event) oneStream {
	var out oneStream
	for i, e := range evs {
		typ, data, err := payment.Encode(e)
		require.NoError(t, err)
		out = append(out, eventstore.RecordedEvent{Type: typ, Data: data, Version: uint64(i), StreamID: "payment-stripe-pi_1", RecordedAt: time.Now()})
	}
	return out
}

// TestPaymentHistoryFeesAreTheLedgers: a fee a settlement report posted
// (settlement.fee_posted) counts in the payment's fees as it does in its
// entries; the fold alone missed it (the console said "fee 0.00" for a
// 0.66 fee). A fee in another currency is listed on its own.
func TestPaymentHistoryFeesAreTheLedgers(t *testing.T) {
	m := payment.Meta{Provider: "stripe", PaymentKey: "pi_1", OccurredAt: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	events := recorded(t,
		payment.Captured{Meta: m, CaptureID: "ch_1", Amount: 1000, Currency: "USD"},
		payment.FeeSettled{Meta: m, LineID: "txn_1", Fee: 66, Currency: "USD"},
		payment.FeeSettled{Meta: m, LineID: "txn_2", Fee: 5, Currency: "EUR"},
	)
	h, found, err := projections.PaymentHistory(context.Background(), noRows{}, events, "stripe", "pi_1")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, int64(66), h.Payment.Summary.Fees, "the payment's fee in its currency is the ledger's")
	assert.Equal(t, []views.CurrencyAmount{{Currency: "EUR", Amount: 5}, {Currency: "USD", Amount: 66}}, h.Fees)
}
