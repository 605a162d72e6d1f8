package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/payment"
)

// partialCapture is one Stripe charge authorized for 100.00 and captured
// for 60.00 (fee 2.04), paid out in its own payout of 57.96: the itemized
// report's charge row "for the full amount of the authorization" and its
// partial_capture_reversal row of −40.00 (docs.stripe.com/reports/
// reporting-categories), and the webhooks payment_intent.succeeded
// (amount_received) and charge.captured (amount_captured).
type partialCapture struct{ pi, ch, po, run string }

const pcHeader = "automatic_payout_id,balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,payment_intent_id\n"

func newPartialCapture() partialCapture {
	run := uniq("pc")
	return partialCapture{pi: "pi_" + run, ch: "ch_" + run, po: "po_" + run, run: run}
}

func (c partialCapture) chargeLine() []byte {
	return fmt.Appendf(nil, pcHeader+"%s,txn_c_%s,2026-11-29 10:00:00,2026-12-01 00:00:00,usd,100.00,2.04,97.96,charge,%s,%s,%s\n",
		c.po, c.run, c.ch, c.ch, c.pi)
}

func (c partialCapture) reversalLine() []byte {
	return fmt.Appendf(nil, pcHeader+"%s,txn_r_%s,2026-11-29 10:05:00,2026-12-01 00:00:00,usd,-40.00,0.00,-40.00,partial_capture_reversal,re_%s,%s,%s\n",
		c.po, c.run, c.run, c.ch, c.pi)
}

func (c partialCapture) succeeded() []byte {
	return fmt.Appendf(nil, `{"id":"evt_pi_%s","object":"event","type":"payment_intent.succeeded","created":%d,"data":{"object":{"id":%q,"object":"payment_intent","amount":10000,"amount_capturable":0,"amount_received":6000,"currency":"usd","status":"succeeded","latest_charge":%q}}}`,
		c.run, time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC).Unix(), c.pi, c.ch)
}

func (c partialCapture) captured() []byte {
	return fmt.Appendf(nil, `{"id":"evt_ch_%s","object":"event","type":"charge.captured","created":%d,"data":{"object":{"id":%q,"object":"charge","payment_intent":%q,"amount":10000,"amount_captured":6000,"captured":true,"currency":"usd"}}}`,
		c.run, time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC).Unix(), c.ch, c.pi)
}

func (c partialCapture) payoutPaid() []byte {
	return fmt.Appendf(nil, `{"id":"evt_po_%s","object":"event","type":"payout.paid","created":%d,"data":{"object":{"id":%q,"object":"payout","amount":5796,"arrival_date":%d,"automatic":true,"currency":"usd","status":"paid"}}}`,
		c.run, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Unix(), c.po, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Unix())
}

// step is one delivery of a partial capture: a report file or a webhook.
type step struct {
	name string
	send func(t *testing.T, s *stack, c partialCapture)
}

func pcSteps() (charge, reversal, succeeded, captured step) {
	report := func(name string, file func(partialCapture) []byte) step {
		return step{name, func(t *testing.T, s *stack, c partialCapture) {
			ans := s.v1(http.MethodPost, "/v1/settlements/stripe", file(c))
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
		}}
	}
	webhook := func(name string, body func(partialCapture) []byte) step {
		return step{name, func(t *testing.T, s *stack, c partialCapture) {
			ans := s.sendStripe(body(c))
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
		}}
	}
	return report("charge line", partialCapture.chargeLine), report("reversal line", partialCapture.reversalLine),
		webhook("payment_intent.succeeded", partialCapture.succeeded), webhook("charge.captured", partialCapture.captured)
}

func stepOrders(steps []step) [][]step {
	if len(steps) <= 1 {
		return [][]step{append([]step(nil), steps...)}
	}
	var out [][]step
	for i := range steps {
		rest := append(append([]step(nil), steps[:i]...), steps[i+1:]...)
		for _, o := range stepOrders(rest) {
			out = append(out, append([]step{steps[i]}, o...))
		}
	}
	return out
}

// Stripe partial captures over HTTP, every order (issue 24, item 5): the
// report's charge line (the 100.00 authorization), its partial capture
// reversal line (−40.00) and the webhooks of the 60.00 captured, in any
// order and delivered again, end with Stripe's books: captured 60.00, the
// 2.04 fee once, provider:stripe:balance holding the payout's net until
// payout.paid takes it, the payout reconciled and no item open. Report
// first used to book 100.00 and leave 40.00 on the balance; charge line,
// webhook, reversal left settlement_mismatch open.
func TestPartialCaptureEveryOrderOverHTTP(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) { partialCaptureEveryOrder(t, settleStack(t, kind)) })
	}
}

func partialCaptureEveryOrder(t *testing.T, s *stack) {
	charge, reversal, succeeded, captured := pcSteps()
	var orders [][]step
	orders = append(orders, stepOrders([]step{charge, reversal, succeeded, captured})...)
	orders = append(orders, stepOrders([]step{charge, reversal, succeeded})...)
	cases := make([]partialCapture, len(orders))
	for i, order := range orders {
		c := newPartialCapture()
		cases[i] = c
		for _, st := range order {
			st.send(t, s, c)
		}
		for _, st := range order { // everything delivered again
			st.send(t, s, c)
		}
		assert.Equal(t, map[string]int64{
			"provider:stripe:balance USD": 6000 - 204,
			"expenses:fees:stripe USD":    204,
			"revenue:sales USD":           -6000,
		}, streamBalances(t, s.store, "payment-stripe-"+c.pi), names(order))
		require.Equal(t, "accepted", s.sendStripe(c.payoutPaid()).outcome(t))
	}
	s.projectedToHead()
	open := s.v1(http.MethodGet, "/v1/reconciliation?status=open", nil)
	require.Equal(t, http.StatusOK, open.Status, open.Body)
	for i, c := range cases {
		name := names(orders[i])
		assert.NotContains(t, open.Body, c.run, name)
		pay := s.v1(http.MethodGet, "/v1/payments/stripe/"+c.pi, nil)
		require.Equal(t, http.StatusOK, pay.Status, pay.Body)
		var p struct {
			Captured int64 `json:"captured"`
			Fees     int64 `json:"fees"`
		}
		require.NoError(t, json.Unmarshal([]byte(pay.Body), &p))
		assert.Equal(t, int64(6000), p.Captured, name)
		assert.Equal(t, int64(204), p.Fees, name)
		po := s.v1(http.MethodGet, "/v1/payouts/stripe/"+c.po, nil)
		require.Equal(t, http.StatusOK, po.Status, po.Body)
		var out struct {
			Status     string `json:"status"`
			Difference int64  `json:"difference"`
		}
		require.NoError(t, json.Unmarshal([]byte(po.Body), &out))
		assert.Equal(t, "reconciled", out.Status, name)
		assert.Zero(t, out.Difference, name)
		assert.Empty(t, streamBalances(t, s.store, "payout-stripe-"+c.po, "payment-stripe-"+c.pi)["provider:stripe:balance USD"],
			"%s: the payout took the balance", name)
		types := countTypes(streamTypes(t, s.store, "payment-stripe-"+c.pi))
		assert.Equal(t, 1, types[payment.TypeCaptured], name)
	}
}

func names(order []step) string {
	var n []string
	for _, st := range order {
		n = append(n, st.name)
	}
	return strings.Join(n, ", ")
}
