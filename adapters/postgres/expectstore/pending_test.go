package expectstore_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/expectstore"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/expectation"
)

// Payments a webhook said are pending (Alipay WAIT_BUYER_PAY, Stripe
// payment_intent.processing), recorded as ignored, are asked about
// without an expectation: once each, by their merchant reference; a paid
// answer ends the asking, a pending one backs off. A payment an
// expectation names is left to the expectation's own schedule.
func TestPendingPaymentsAreAsked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := worlds(t)["postgres"](t)
	pool, es := w.pool, w.store.(*postgres.EventStore)
	svc := ingest.New(postgres.NewJournal(pool, es), ingest.PaymentDecider{}, ingest.Options{})
	_, _, err := w.ops.Register(ctx, expectation.RegisterCommand{Provider: "alipay", Reference: "ORDER-Q", Amount: 1000,
		Currency: "CNY", ExpiresAt: w.clock().Add(time.Hour), Actor: "shop"})
	require.NoError(t, err)
	w.drain(t, ctx, w.manager("m"))

	form := url.Values{"notify_id": {"n-wait"}, "notify_time": {"2026-12-01 10:00:00"}, "notify_type": {"trade_status_sync"},
		"app_id": {"2021000000000001"}, "charset": {"utf-8"}, "trade_no": {"2026120122001400042"}, "out_trade_no": {"ORDER-P"},
		"trade_status": {"WAIT_BUYER_PAY"}, "total_amount": {"10.00"}}
	wait, err := (&alipay.Adapter{}).Renormalize("", []byte(form.Encode()))
	require.NoError(t, err)
	form.Set("notify_id", "n-wait-q")
	form.Set("trade_no", "2026120122001400043")
	form.Set("out_trade_no", "ORDER-Q")
	waitQ, err := (&alipay.Adapter{}).Renormalize("", []byte(form.Encode()))
	require.NoError(t, err)
	processing, err := (&stripe.Adapter{}).Renormalize("", []byte(`{"id":"evt_proc","object":"event","type":"payment_intent.processing",
		"created":1764583200,"data":{"object":{"id":"pi_proc","object":"payment_intent","status":"processing","amount":500,"currency":"usd"}}}`))
	require.NoError(t, err)
	for _, ev := range []delivery.Event{wait, waitQ, processing} {
		res, err := svc.Ingest(ctx, ev)
		require.NoError(t, err)
		require.Equal(t, ingest.Ignored, res.Outcome, "a pending payment carries no fact")
	}

	st := expectstore.New(pool)
	asker := &scriptedAsker{asked: map[string]int{}, answer: func(ref string, _ int) (expectations.Answer, error) {
		if ref == "ORDER-P" || ref == "ORDER-Q" {
			return expectations.Answer{Outcome: expectations.OutcomePending}, nil
		}
		return expectations.Answer{Outcome: expectations.OutcomePaid, Event: delivery.Event{Provider: "stripe", DedupKey: "query_pi_proc"}}, nil
	}}
	gate := &recordingGate{}
	q := expectations.NewQuerier(map[string]expectations.Asker{"alipay": asker, "stripe": asker}, gate, st,
		// Its clock an hour ahead of the database's first_seen_at: due.
		expectations.QueryConfig{Owner: "q", Rate: 1e6, PendingAfter: time.Millisecond,
			Now: func() time.Time { return time.Now().Add(time.Hour) }})
	for range 5 {
		_, err := q.Sweep(ctx)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, asker.count("ORDER-P"), "asked by its out_trade_no, once (then backs off)")
	assert.Equal(t, 1, asker.count("pi_proc"), "asked by its PaymentIntent, once (paid: done)")
	assert.Equal(t, 1, asker.count("ORDER-Q"), "asked once, on its expectation's schedule only")
	require.Len(t, gate.evs, 1)
	var next *time.Time
	var attempts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT next_query_at, query_attempts FROM pending_payments WHERE reference = 'ORDER-P'`).Scan(&next, &attempts))
	require.NotNil(t, next)
	assert.Equal(t, 1, attempts)
	require.NoError(t, pool.QueryRow(ctx, `SELECT next_query_at FROM pending_payments WHERE reference = 'pi_proc'`).Scan(&next))
	assert.Nil(t, next, "paid: not asked again")
	var named int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pending_payments WHERE reference = 'ORDER-Q'`).Scan(&named))
	assert.Zero(t, named, "ORDER-Q is expected: its expectation's schedule asks")
	n, err := st.ScanPending(ctx, time.Millisecond)
	require.NoError(t, err)
	assert.Zero(t, n, "a second scan adds nothing")
}
