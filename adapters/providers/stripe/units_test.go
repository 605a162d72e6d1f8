package stripe_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// chargeIn returns charge.succeeded.json charged amount in currency cur.
func chargeIn(t *testing.T, cur string, amount string) []byte {
	body := string(providertest.Fixture(t, "charge.succeeded.json"))
	require.Contains(t, body, `"currency": "usd"`)
	body = strings.ReplaceAll(body, `"currency": "usd"`, `"currency": "`+cur+`"`)
	body = strings.ReplaceAll(body, `"amount": 2000`, `"amount": `+amount)
	body = strings.ReplaceAll(body, `"amount_captured": 2000`, `"amount_captured": `+amount)
	return []byte(body)
}

// Stripe (docs.stripe.com/currencies, special cases; support article
// "Deprecation of fractional ISK charges"): "ISK will remain a two-decimal
// currency in the Stripe API, and an ISK amount of 100 will continue to
// represent 1 króna", and amounts must be "evenly divisible by 100". ISO 4217
// gives ISK no minor unit: 50000 from Stripe is 500 kr, booked as 500.
func TestISKIsConvertedFromStripesTwoDecimals(t *testing.T) {
	a := newAdapter(t)
	ev := providertest.ParseOne(t, a, signed(chargeIn(t, "isk", "50000"), secret, now))
	require.Len(t, ev.Facts, 1)
	assert.Equal(t, money.Currency("ISK"), ev.Facts[0].Currency)
	assert.Equal(t, int64(500), ev.Facts[0].Amount)
}

// A fraction of a króna cannot be represented in ISO units: 400.
func TestISKFractionIsRefused(t *testing.T) {
	a := newAdapter(t)
	_, err := a.Parse(signed(chargeIn(t, "isk", "50050"), secret, now))
	require.Error(t, err)
	assert.ErrorIs(t, err, delivery.ErrInvalidAmount)
	assert.True(t, providertest.ClientError(err))
}

// HUF and TWD are Stripe special cases for payouts only (amounts divisible by
// 100, still in hundredths); UGX and JPY are zero-decimal in Stripe's API and
// in ISO. None is converted.
func TestOtherSpecialCasesAreISOAlready(t *testing.T) {
	a := newAdapter(t)
	for _, tc := range []struct {
		cur    string
		amount int64
	}{{"huf", 2000}, {"twd", 2000}, {"ugx", 2000}, {"jpy", 2000}} {
		ev := providertest.ParseOne(t, a, signed(chargeIn(t, tc.cur, "2000"), secret, now))
		require.Len(t, ev.Facts, 1, tc.cur)
		assert.Equal(t, tc.amount, ev.Facts[0].Amount, tc.cur)
	}
}

// docs/reference.md: an amount above 10^15 minor units is 400.
func TestAmountAboveTheBoundIsRefused(t *testing.T) {
	a := newAdapter(t)
	_, err := a.Parse(signed(chargeIn(t, "usd", "1000000000000001"), secret, now))
	require.Error(t, err)
	assert.ErrorIs(t, err, delivery.ErrInvalidAmount)
	ev := providertest.ParseOne(t, a, signed(chargeIn(t, "usd", "1000000000000000"), secret, now))
	assert.Equal(t, delivery.MaxAmount, ev.Facts[0].Amount)
	// 2^63-1, accepted before the bound, and its ISK twin.
	_, err = a.Parse(signed(chargeIn(t, "usd", "9223372036854775807"), secret, now))
	assert.ErrorIs(t, err, delivery.ErrInvalidAmount)
}

// The webhook path and the report path (Balance Transactions, the API the
// sync reads) read Stripe's integer amounts through one table: for every
// ISO 4217 currency they agree, on a value and on a refusal. MGA is
// zero-decimal in Stripe's API and two-decimal in ISO: 1000 Ar from Stripe
// is 100000 ISO minor units on both paths.
func TestWebhookAndReportAgreeOnEveryCurrency(t *testing.T) {
	a := newAdapter(t)
	for _, c := range money.Currencies() {
		for _, amount := range []string{"12300", "12345"} {
			fromReport, rerr := stripe.MinorFromAPI(amount, c)
			ev, werr := a.Parse(signed(chargeIn(t, strings.ToLower(string(c)), amount), secret, now))
			if rerr != nil || werr != nil {
				assert.True(t, rerr != nil && werr != nil, "%s %s: report %v, webhook %v", amount, c, rerr, werr)
				continue
			}
			require.Len(t, ev, 1, c)
			require.Len(t, ev[0].Facts, 1, c)
			assert.Equal(t, fromReport, ev[0].Facts[0].Amount, "%s %s", amount, c)
		}
	}
	mga, err := stripe.MinorFromAPI("1000", "MGA")
	require.NoError(t, err)
	assert.Equal(t, int64(100000), mga)
}
