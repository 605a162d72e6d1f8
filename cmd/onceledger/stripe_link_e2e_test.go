package main_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/domain/payment"
)

// noPIHeader is an itemized payout reconciliation report whose columns
// leave out payment_intent_id (Stripe lets the user choose them).
const noPIHeader = "automatic_payout_id,balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,charge_id\n"

func noPILine(payout, txn, charge string) string {
	return fmt.Sprintf("%s,%s,2026-11-29 10:00:00,2026-12-01 00:00:00,usd,10.00,0.59,9.41,charge,%s,%s\n", payout, txn, charge, charge)
}

func stripeCharge(ch, pi string) []byte {
	return fmt.Appendf(nil, `{"id":"evt_%s","object":"event","type":"charge.succeeded","created":%d,"data":{"object":{"id":%q,"object":"charge","payment_intent":%q,"amount":1000,"amount_captured":1000,"captured":true,"currency":"usd"}}}`,
		ch, time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).Unix(), ch, pi)
}

// A Stripe report without payment_intent_id is linked through the
// charge→PaymentIntent ids the webhooks gave the ledger: its charge line
// joins payment-stripe-pi_…, one capture with its fee, and no second stream
// payment-stripe-ch_… starts. A file with a line whose charge no webhook
// named is refused whole, 400 naming the column and the line (issue 24,
// item 2; CONTRACT.md, settlement reports).
func TestStripeReportWithoutPaymentIntentIsLinked(t *testing.T) {
	s := settleStack(t, onPostgres)
	ch, pi, unknown, po := uniq("ch_"), uniq("pi_"), uniq("ch_"), uniq("po_")
	require.Equal(t, "accepted", s.sendStripe(stripeCharge(ch, pi)).outcome(t))

	refused := s.v1(http.MethodPost, "/v1/settlements/stripe",
		[]byte(noPIHeader+noPILine(po, uniq("txn_"), ch)+noPILine(po, uniq("txn_"), unknown)))
	require.Equal(t, http.StatusBadRequest, refused.Status, refused.Body)
	assert.Contains(t, refused.Body, "payment_intent_id")
	assert.Contains(t, refused.Body, "3", "the line")
	assert.Contains(t, refused.Body, unknown)
	assert.Equal(t, int64(0), s.scalar(`SELECT count(*) FROM webhook_inbox WHERE event_type LIKE 'settlement.%'`), "nothing imported")

	txn := uniq("txn_")
	wantImport(t, s, []byte(noPIHeader+noPILine(po, txn, ch)), 1, 1, 0)
	assert.Equal(t, map[string]int64{
		"provider:stripe:balance USD": 1000 - 59,
		"expenses:fees:stripe USD":    59,
		"revenue:sales USD":           -1000,
	}, streamBalances(t, s.store, "payment-stripe-"+pi))
	assert.Equal(t, 1, countTypes(streamTypes(t, s.store, "payment-stripe-"+pi))[payment.TypeCaptured])
	assert.Empty(t, streamTypes(t, s.store, "payment-stripe-"+ch), "no second stream")
	wantImport(t, s, []byte(noPIHeader+noPILine(po, txn, ch)), 1, 0, 1)
}

// Keys that change keep old data right: a line recorded before the lookup,
// when such a file was keyed by its charge (payment-stripe-ch_…), keeps the
// stream it was recorded in: importing its file again now is a plain
// duplicate (the same facts hash), not a conflict, and adds no event.
func TestStripeLineRecordedUnderItsChargeStaysWhereItIs(t *testing.T) {
	s := settleStack(t, onPostgres)
	ch, pi, po, txn := uniq("ch_"), uniq("pi_"), uniq("po_"), uniq("txn_")
	file := []byte(noPIHeader + noPILine(po, txn, ch))
	// The old derivation: the line keyed by its charge.
	oldKeys := report.Options{Link: func(_, charge string) (string, bool, error) { return charge, true, nil }}
	sum, err := s.app.Importer().Record(context.Background(), "stripe", func(fn report.Func) error {
		return stripe.ParseSettlement(bytes.NewReader(file), oldKeys, fn)
	})
	require.NoError(t, err)
	require.Equal(t, 1, sum.New)
	before := streamTypes(t, s.store, "payment-stripe-"+ch)
	require.NotEmpty(t, before)

	// Its webhook arrives after, naming the PaymentIntent; then the file is
	// imported again, now linked through the lookup.
	require.Equal(t, "accepted", s.sendStripe(stripeCharge(ch, pi)).outcome(t))
	piBefore := streamTypes(t, s.store, "payment-stripe-"+pi)
	wantImport(t, s, file, 1, 0, 1)
	assert.Equal(t, before, streamTypes(t, s.store, "payment-stripe-"+ch), "the old stream is unchanged")
	assert.Equal(t, piBefore, streamTypes(t, s.store, "payment-stripe-"+pi), "the line is not recorded again")
}
