package main_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 34, cases 4 and 5: reversals told only by a report post what they
// did to the money, and the webhook of the same fact, earlier or later,
// adds nothing. Both stores.

// stripeBTList is a Balance Transactions list of the given objects.
func stripeBTList(bts ...string) []byte {
	out := `{"object":"list","url":"/v1/balance_transactions","has_more":false,"data":[`
	for i, b := range bts {
		if i > 0 {
			out += ","
		}
		out += b
	}
	return []byte(out + "]}")
}

// stripeBT is one balance transaction whose source is expanded.
func stripeBT(id string, amount int64, category, source string) string {
	return fmt.Sprintf(`{"id":%q,"object":"balance_transaction","amount":%d,"available_on":1764547200,"created":1764410399,"currency":"usd","fee":0,"net":%d,"reporting_category":%q,"type":%q,"source":%s}`,
		id, amount, amount, category, category, source)
}

// Stripe refund_failure (the refund came back: the balance is credited)
// and charge_failure (a captured charge failed: the balance is debited),
// known from the Balance Transactions only; then refund.failed for the
// same refund adds nothing.
func TestStripeReportOnlyReversalsPost(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			run := uniq("rev")
			pi, ch, re := "pi_"+run, "ch_"+run, "re_"+run
			pi2, ch2 := "pi2_"+run, "ch2_"+run
			charge := func(ch, pi string, amount int64) string {
				return fmt.Sprintf(`{"id":%q,"object":"charge","amount":%d,"amount_captured":%d,"currency":"usd","payment_intent":%q}`, ch, amount, amount, pi)
			}
			refund := fmt.Sprintf(`{"id":%q,"object":"refund","amount":10000,"currency":"usd","charge":%q,"payment_intent":%q}`, re, ch, pi)
			list := stripeBTList(
				stripeBT("txn_c_"+run, 10000, "charge", charge(ch, pi, 10000)),
				stripeBT("txn_r_"+run, -10000, "refund", refund),
				stripeBT("txn_rf_"+run, 10000, "refund_failure", refund),
				stripeBT("txn_c2_"+run, 5000, "charge", charge(ch2, pi2, 5000)),
				stripeBT("txn_cf_"+run, -5000, "charge_failure", charge(ch2, pi2, 5000)),
			)
			ans := s.v1(http.MethodPost, "/v1/settlements/stripe?payout_id=po_"+run, list)
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			want := map[string]int64{"provider:stripe:balance|USD": 10000, "revenue:sales|USD": -10000}
			s.projectedToHead()
			assert.Equal(t, want, s.readBalances(), "the refund came back; the failed charge is no sale")

			hook := fmt.Appendf(nil, `{"id":"evt_rf_%s","object":"event","type":"refund.failed","created":%d,"data":{"object":{"id":%q,"object":"refund","amount":10000,"charge":%q,"payment_intent":%q,"currency":"usd","status":"failed","failure_reason":"expired_or_canceled_card"}}}`,
				run, time.Now().Unix(), re, ch, pi)
			require.Equal(t, http.StatusOK, s.sendStripe(hook).Status)
			s.projectedToHead()
			assert.Equal(t, want, s.readBalances(), "the webhook of the same failure adds nothing")
		})
	}
}

// Adyen RefundedReversed (the refund came back) and ChargebackReversed
// (the chargeback's funds reinstated), known from the Settlement details
// report only, then the webhooks of the same facts; and the other order.
func TestAdyenReportOnlyReversalsPost(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			g := newAdyenGen(rand.New(rand.NewPCG(34, 4)), uniq("adr"))
			pay, capture, refund := g.psp(), g.psp(), g.psp()
			pay2, capture2, dispute := g.psp(), g.psp(), g.psp()
			g.line("Settled", pay, capture, "EUR", 10000, "1", "EUR", 10000, 0)
			g.line("Refunded", pay, refund, "EUR", -10000, "1", "EUR", -10000, 0)
			g.line("RefundedReversed", pay, refund, "EUR", 10000, "1", "EUR", 10000, 0)
			g.line("Settled", pay2, capture2, "EUR", 4000, "1", "EUR", 4000, 0)
			g.line("Chargeback", pay2, dispute, "EUR", -4000, "1", "EUR", -4000, 0)
			g.line("ChargebackReversed", pay2, dispute, "EUR", 4000, "1", "EUR", 4000, 0)
			ans := s.v1(http.MethodPost, "/v1/settlements/adyen", writeAdyenReport(g.rows))
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			want := map[string]int64{"provider:adyen:balance|EUR": 14000, "revenue:sales|EUR": -14000}
			s.projectedToHead()
			assert.Equal(t, want, s.readBalances(), "the balance holds what Adyen holds")
			g.hook("REFUNDED_REVERSED", refund, pay, "EUR", 10000)
			g.hook("CHARGEBACK_REVERSED", dispute, pay2, "EUR", 4000)
			for _, h := range g.hooks {
				s.send("adyen", h)
			}
			s.projectedToHead()
			assert.Equal(t, want, s.readBalances(), "the webhooks of the same facts add nothing")
		})
	}
}

// Case 5: the project's own PayPal STL sample nets to zero (its T0400
// withdrawal takes what the day left): its T1201 chargeback posts as a
// dispute opened, so provider:paypal:balance ends at 0 in each currency.
func TestPaypalSTLSampleChargebackNetsToZero(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "samples", "STL-20261130.01.009.CSV"))
	require.NoError(t, err)
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			ans := s.v1(http.MethodPost, "/v1/settlements/paypal", raw)
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			s.projectedToHead()
			b := s.readBalances()
			assert.Zero(t, b["provider:paypal:balance|USD"], "the file nets to zero: %v", b)
			assert.Equal(t, int64(750), b["receivable:disputes:paypal|USD"], "the T1201 chargeback: %v", b)
		})
	}
}

// A Balance Transactions line that names its payment only by a bare charge
// id (a partial_capture_reversal whose source is the charge, not expanded)
// is linked through the charge→PaymentIntent ids the ledger knows, or the
// file is refused with 400 naming what is missing; never kept attached to
// no payment.
func TestStripeBareChargeSourceIsLinkedOrRefused(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			c := newPartialCapture()
			require.Equal(t, http.StatusOK, s.sendStripe(c.captured()).Status)
			bare := func(run, ch string) []byte {
				return stripeBTList(fmt.Sprintf(`{"id":"txn_r_%s","object":"balance_transaction","amount":-4000,"available_on":1764547200,"created":1764410399,"currency":"usd","fee":0,"net":-4000,"reporting_category":"partial_capture_reversal","type":"payment_refund","source":%q}`,
					run, ch))
			}
			unknown := uniq("nolink")
			ans := s.v1(http.MethodPost, "/v1/settlements/stripe", bare(unknown, "ch_"+unknown))
			require.Equal(t, http.StatusBadRequest, ans.Status, ans.Body)
			assert.Contains(t, ans.Body, "source")
			assert.Contains(t, ans.Body, "ch_"+unknown)

			ans = s.v1(http.MethodPost, "/v1/settlements/stripe", bare(c.run, c.ch))
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			s.projectedToHead()
			assert.Equal(t, c.pi, s.scalarText(`SELECT payment_id FROM settlement_lines WHERE line_id = $1`, "txn_r_"+c.run),
				"the line joins the payment the charge belongs to")
		})
	}
}
