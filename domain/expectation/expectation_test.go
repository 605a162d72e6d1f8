package expectation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/payment"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func register(t *testing.T) []payment.Event {
	t.Helper()
	evs, err := expectation.DecideRegister(nil, expectation.RegisterCommand{Provider: "alipay", Reference: "ORDER-1",
		Amount: 1000, Currency: "CNY", ExpiresAt: t0.Add(time.Hour), Actor: "shop", Now: t0})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	return roundTrip(t, evs)
}

// roundTrip encodes and decodes events as the store would.
func roundTrip(t *testing.T, evs []payment.Event) []payment.Event {
	t.Helper()
	out := make([]payment.Event, len(evs))
	for i, e := range evs {
		typ, data, err := expectation.Encode(e)
		require.NoError(t, err)
		out[i], err = expectation.Decode(typ, data)
		require.NoError(t, err)
		assert.Equal(t, e, out[i])
	}
	return out
}

func TestRegisterIsIdempotentAndRefusesAnotherAmount(t *testing.T) {
	h := register(t)
	x := expectation.Fold(h)
	assert.Equal(t, expectation.StatusExpected, x.Status)
	assert.Equal(t, expectation.IDOf("alipay", "ORDER-1"), x.ID)
	again, err := expectation.DecideRegister(h, expectation.RegisterCommand{Provider: "alipay", Reference: "ORDER-1",
		Amount: 1000, Currency: "CNY", ExpiresAt: t0.Add(2 * time.Hour), Actor: "shop", Now: t0})
	require.NoError(t, err)
	assert.Empty(t, again, "the same body again records nothing")
	_, err = expectation.DecideRegister(h, expectation.RegisterCommand{Provider: "alipay", Reference: "ORDER-1",
		Amount: 1001, Currency: "CNY", ExpiresAt: t0.Add(time.Hour), Actor: "shop", Now: t0})
	require.ErrorIs(t, err, expectation.ErrConflict)
	_, err = expectation.DecideRegister(h, expectation.RegisterCommand{Provider: "alipay", Reference: "ORDER-1",
		Amount: 1000, Currency: "USD", ExpiresAt: t0.Add(time.Hour), Actor: "shop", Now: t0})
	require.ErrorIs(t, err, expectation.ErrConflict)
}

func TestRegisterNamesTheBadField(t *testing.T) {
	ok := expectation.RegisterCommand{Provider: "stripe", Reference: "pi_1", Amount: 1, Currency: "USD",
		ExpiresAt: t0.Add(time.Minute), Actor: "shop", Now: t0}
	for field, mutate := range map[string]func(*expectation.RegisterCommand){
		"provider":   func(c *expectation.RegisterCommand) { c.Provider = "visa" },
		"reference":  func(c *expectation.RegisterCommand) { c.Reference = "" },
		"amount":     func(c *expectation.RegisterCommand) { c.Amount = 0 },
		"currency":   func(c *expectation.RegisterCommand) { c.Currency = "XYZ" },
		"expires_at": func(c *expectation.RegisterCommand) { c.ExpiresAt = t0 },
	} {
		c := ok
		mutate(&c)
		_, err := expectation.DecideRegister(nil, c)
		require.ErrorIs(t, err, expectation.ErrInvalid, field)
		assert.Contains(t, err.Error(), field+":")
	}
	c := ok
	c.Amount = 1_000_000_000_000_001
	_, err := expectation.DecideRegister(nil, c)
	assert.ErrorContains(t, err, "amount:")
}

func TestOverdueThenLateCaptureClearsTheItem(t *testing.T) {
	h := register(t)
	assert.Empty(t, expectation.DecideClock(h, t0.Add(59*time.Minute)), "not yet")
	h = append(h, roundTrip(t, expectation.DecideClock(h, t0.Add(time.Hour)))...)
	x := expectation.Fold(h)
	assert.Equal(t, expectation.StatusOverdue, x.Status)
	require.Len(t, x.Items, 1)
	assert.True(t, x.Items[0].Open)
	assert.Equal(t, expectation.ReconPaymentOverdue, x.Items[0].Kind)
	assert.Empty(t, expectation.DecideClock(h, t0.Add(2*time.Hour)), "overdue once")

	h = append(h, roundTrip(t, expectation.DecideCapture(h, expectation.CaptureSeen{PaymentStream: "payment-alipay-T1",
		CaptureID: "T1", Amount: 1000, Currency: "CNY", At: t0.Add(3 * time.Hour)}))...)
	x = expectation.Fold(h)
	assert.Equal(t, expectation.StatusPaid, x.Status)
	assert.True(t, x.Late)
	assert.False(t, x.Items[0].Open, "the late capture resolves payment_overdue")
	assert.Empty(t, expectation.DecideCapture(h, expectation.CaptureSeen{CaptureID: "T1", Amount: 1000, Currency: "CNY"}), "paid once")
	_, err := expectation.DecideCancel(h, expectation.CancelCommand{Actor: "shop", Now: t0})
	require.ErrorIs(t, err, expectation.ErrPaid)
}

func TestCaptureOfAnotherAmountOpensAmountMismatch(t *testing.T) {
	h := register(t)
	evs := roundTrip(t, expectation.DecideCapture(h, expectation.CaptureSeen{PaymentStream: "payment-alipay-T1",
		CaptureID: "T1", Amount: 900, Currency: "CNY", At: t0}))
	x := expectation.Fold(append(h, evs...))
	assert.Equal(t, expectation.StatusPaid, x.Status)
	assert.False(t, x.Late)
	require.Len(t, x.Items, 1)
	assert.Equal(t, payment.ReconAmountMismatch, x.Items[0].Kind)
	assert.Equal(t, "ORDER-1", x.Items[0].PaymentKey)
}

func TestCancelAndFailure(t *testing.T) {
	h := register(t)
	h = append(h, roundTrip(t, expectation.DecideFailure(h, expectation.FailureSeen{Reason: "declined", At: t0}))...)
	assert.Equal(t, expectation.StatusFailed, expectation.Fold(h).Status)
	evs, err := expectation.DecideCancel(h, expectation.CancelCommand{Actor: "shop", Note: "customer left", Now: t0})
	require.NoError(t, err)
	h = append(h, roundTrip(t, evs)...)
	assert.Equal(t, expectation.StatusCanceled, expectation.Fold(h).Status)
	again, err := expectation.DecideCancel(h, expectation.CancelCommand{Actor: "shop", Now: t0})
	require.NoError(t, err)
	assert.Empty(t, again)
	assert.Empty(t, expectation.DecideCapture(h, expectation.CaptureSeen{CaptureID: "T", Amount: 1000, Currency: "CNY"}),
		"a canceled expectation stays canceled")
	assert.Empty(t, expectation.DecideClock(h, t0.Add(24*time.Hour)))
	_, err = expectation.DecideCancel(nil, expectation.CancelCommand{Actor: "shop", Now: t0})
	require.ErrorIs(t, err, expectation.ErrNotFound)
}
