package payment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
)

// A failed attempt of 9.00 keeps its amount and currency: the payment's
// summary shows them (not "currency not known yet", not 0), and nothing is
// posted.
func TestFailedKeepsItsAmount(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(deliveryOf("evt_fail", delivery.Fact{Kind: delivery.KindFailed, Amount: 900, Currency: "USD", Reason: "card_declined"}))
	require.Len(t, out, 1)
	f, ok := out[0].(Failed)
	require.True(t, ok, "%T", out[0])
	assert.Equal(t, int64(900), f.Amount)
	assert.Equal(t, "USD", string(f.Currency))
	assert.Empty(t, Postings(f), "a failure posts nothing")

	var sum Summary
	for _, e := range s.history {
		sum.Apply(e)
	}
	assert.Equal(t, "USD", string(sum.Currency))
	assert.Equal(t, int64(900), sum.FailedAmount)
	assert.Equal(t, StatusFailed, sum.Status())
	assert.Zero(t, sum.Captured)
}

// An amount without a currency is not kept (it could not be read), and a
// failure without either stays as failures were before.
func TestFailedWithoutCurrencyKeepsNoAmount(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(deliveryOf("evt_fail", delivery.Fact{Kind: delivery.KindFailed, Amount: 900}))
	require.Len(t, out, 1)
	assert.Equal(t, Failed{Meta: out[0].Metadata()}, out[0])
	var sum Summary
	sum.Apply(out[0])
	assert.Zero(t, sum.FailedAmount)
	assert.Empty(t, sum.Currency)
}
