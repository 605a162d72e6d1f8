package askers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/askers"
	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi/stripefake"
)

// The Stripe asker against the double: each state, a wrong object, 429
// with Retry-After, 5xx.
func TestStripeAsker(t *testing.T) {
	fake := stripefake.New("sk_test_1")
	srv := httptest.NewServer(fake)
	defer srv.Close()
	client, err := stripeapi.New(srv.URL, "sk_test_1", nil)
	require.NoError(t, err)
	a := askers.Stripe{Client: client}
	ctx := context.Background()

	ans, err := a.Ask(ctx, "pi_new")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomeNotExist, ans.Outcome)

	fake.SetPaymentIntent("pi_wait", stripefake.PaymentIntent{Status: "processing", Amount: 1000, Currency: "usd", Created: 1764410000})
	ans, err = a.Ask(ctx, "pi_wait")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomePending, ans.Outcome)

	fake.SetPaymentIntent("pi_paid", stripefake.PaymentIntent{Status: "succeeded", Amount: 1000, Currency: "usd", ChargeID: "ch_paid", Created: 1764410000})
	ans, err = a.Ask(ctx, "pi_paid")
	require.NoError(t, err)
	require.Equal(t, expectations.OutcomePaid, ans.Outcome)
	assert.Equal(t, "pi_paid", ans.Event.PaymentKey)
	assert.Equal(t, "ch_paid", ans.Event.Facts[0].BusinessID)
	assert.Equal(t, int64(1000), ans.Event.Facts[0].Amount)

	fake.SetPaymentIntent("pi_gone", stripefake.PaymentIntent{Status: "canceled", Amount: 1000, Currency: "usd", Created: 1})
	ans, err = a.Ask(ctx, "pi_gone")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomeClosed, ans.Outcome)

	fake.SetPaymentIntent("pi_odd", stripefake.PaymentIntent{Status: "succeeded", Amount: 1, Currency: "usd", ChargeID: "ch", Created: 1, WrongID: true})
	_, err = a.Ask(ctx, "pi_odd")
	require.ErrorIs(t, err, expectations.ErrForged)

	fake.SetPaymentIntent("pi_busy", stripefake.PaymentIntent{HTTPStatus: http.StatusTooManyRequests, RetryAfter: "2"})
	_, err = a.Ask(ctx, "pi_busy")
	var ra *expectations.RetryAfterError
	require.ErrorAs(t, err, &ra)
	assert.Positive(t, ra.After)

	fake.SetPaymentIntent("pi_down", stripefake.PaymentIntent{HTTPStatus: http.StatusInternalServerError})
	_, err = a.Ask(ctx, "pi_down")
	require.Error(t, err)
	assert.NotErrorIs(t, err, expectations.ErrForged)
}
