package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi/stripefake"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/settlement"
)

// settle sync stripe records Stripe's balance (GET /v1/balance: available
// + pending, per currency, in ISO minor units) as a balance assertion on
// provider:stripe:balance (issue 35); ISK, two-decimal at Stripe, is
// converted.
func TestSettleSyncStripeStatesTheBalance(t *testing.T) {
	url := pgtest.NewDatabase(t)
	g := settleGlobals(url)
	fake := stripefake.New("sk_test_bal")
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	l := settlement.Line{Provider: "stripe", Kind: settlement.KindCharge, SourceType: "charge", LineID: "txn_bal_1",
		PaymentKey: "pi_bal_1", CaptureID: "ch_bal_1", Gross: 1000, Fee: 59, Net: 941,
		Currency: "USD", OriginalAmount: 1000, OriginalCurrency: "USD", PayoutID: "po_bal", OccurredAt: at}
	require.NoError(t, fake.AddBalanceTransaction("po_bal", stripefake.BalanceTransaction(l)))
	fake.SetBalance([]stripefake.BalanceAmount{{Amount: 900, Currency: "usd"}, {Amount: 15000, Currency: "isk"}},
		[]stripefake.BalanceAmount{{Amount: 41, Currency: "usd"}})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cmd := &settleSyncStripeCmd{Config: stripeapi.Config{APIKey: "sk_test_bal", APIBase: srv.URL}, Payout: "po_bal"}
	require.NoError(t, cmd.Run(g, &settleCmd{UnsettledAfter: 168 * time.Hour}))
	assert.Contains(t, fake.Requests(), "/v1/balance")

	a, err := app.New(context.Background(), app.Config{DatabaseURL: url})
	require.NoError(t, err)
	defer a.Close()
	rows, err := a.Pool().Query(context.Background(),
		`SELECT split_part(stream_id, '@', 1), data->'points'->0->>'amount' FROM events WHERE type = 'balance.asserted' ORDER BY stream_id`)
	require.NoError(t, err)
	var got []string
	for rows.Next() {
		var stream, amount string
		require.NoError(t, rows.Scan(&stream, &amount))
		got = append(got, fmt.Sprintf("%s=%s", stream, amount))
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"assertion-provider:stripe:balance-ISK=150", "assertion-provider:stripe:balance-USD=941"}, got)
}
