package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 34: the money reports and coupons move, through the contract only
// (signed webhooks, report uploads, /v1 reads), on both event stores.

// payoutArrivals reads /v1/payouts?provider=p: payout id → arrival_date.
func (s *stack) payoutArrivals(provider string) map[string]string {
	s.t.Helper()
	var out struct {
		Payouts []struct {
			PayoutID    string `json:"payout_id"`
			ArrivalDate string `json:"arrival_date"`
		} `json:"payouts"`
	}
	ans := s.v1(http.MethodGet, "/v1/payouts?provider="+provider, nil)
	require.Equal(s.t, http.StatusOK, ans.Status, ans.Body)
	require.NoError(s.t, json.Unmarshal([]byte(ans.Body), &out))
	m := map[string]string{}
	for _, p := range out.Payouts {
		m[p.PayoutID] = p.ArrivalDate
	}
	return m
}

// Case 8: a payout's arrival_date is the provider's, not the time of the
// event that reported it: Stripe's payout.paid arrival_date, Square's
// Payout arrival_date (2026-12-02 for a payout created 2026-12-01T10:00Z).
func TestPayoutsCarryTheProvidersArrivalDate(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			run := uniq("arr")
			created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			arrival := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
			po := "po_" + run
			hook := fmt.Appendf(nil, `{"id":"evt_%s","object":"event","type":"payout.paid","created":%d,"data":{"object":{"id":%q,"object":"payout","amount":1000,"arrival_date":%d,"created":%d,"automatic":true,"currency":"usd","status":"paid"}}}`,
				run, created.Unix(), po, arrival.Unix(), created.Unix())
			require.Equal(t, "accepted", s.sendStripe(hook).outcome(t))

			sq := "sqpo_" + run
			rep := fmt.Appendf(nil, `{"payout_entries":[{"id":"poe_%s","payout_id":%q,"effective_at":"2026-12-01T09:00:00Z","type":"ADJUSTMENT",`+
				`"gross_amount_money":{"amount":1000,"currency":"USD"},"fee_amount_money":{"amount":0,"currency":"USD"},"net_amount_money":{"amount":1000,"currency":"USD"}}],`+
				`"payout":{"id":%q,"status":"PAID","location_id":"L1","created_at":"2026-12-01T10:00:00Z","amount_money":{"amount":1000,"currency":"USD"},"type":"BATCH","arrival_date":"2026-12-02"}}`,
				run, sq, sq)
			ans := s.v1(http.MethodPost, "/v1/settlements/square", rep)
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)

			s.projectedToHead()
			assert.Equal(t, "2026-12-03T00:00:00Z", s.payoutArrivals("stripe")[po], "Stripe's arrival_date")
			assert.Equal(t, "2026-12-02T00:00:00Z", s.payoutArrivals("square")[sq], "Square's arrival_date")
		})
	}
}

// Case 8: Stripe's risk_reserved_funds (funds held to mitigate risk, and
// their release) moves money between provider:stripe:balance and
// provider:stripe:reserve, as Adyen's and Square's reserve lines do.
func TestStripeReservedFundsPostToTheReserve(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			run := uniq("rsv")
			po := "po_" + run
			bt := func(id string, amount int64, category, typ string) string {
				return fmt.Sprintf(`{"id":"txn_%s_%s","object":"balance_transaction","amount":%d,"available_on":1764547200,"created":1764410399,"currency":"usd","fee":0,"net":%d,"reporting_category":%q,"type":%q,"source":null}`,
					run, id, amount, amount, category, typ)
			}
			list := `{"object":"list","url":"/v1/balance_transactions","has_more":false,"data":[` +
				bt("hold", -5000, "risk_reserved_funds", "reserve_transaction") + `,` +
				bt("release", 2000, "risk_reserved_funds", "reserve_transaction") + `,` +
				bt("hold2", -700, "", "reserve_hold") + `]}`
			ans := s.v1(http.MethodPost, "/v1/settlements/stripe?payout_id="+po, []byte(list))
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			s.projectedToHead()
			assert.Equal(t, map[string]int64{"provider:stripe:balance|USD": -3700, "provider:stripe:reserve|USD": 3700}, s.readBalances())
		})
	}
}

// Case 7: a payout is proven only by lines in its own currency: a payout of
// 10.00 EUR whose only line is 10.00 USD is a mismatch, on /v1/payouts and
// as a payout_mismatch item; a line in its currency then proves it.
func TestPayoutProvenOnlyByLinesInItsCurrency(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			run := uniq("cur")
			po := "po_" + run
			hook := fmt.Appendf(nil, `{"id":"evt_%s","object":"event","type":"payout.paid","created":%d,"data":{"object":{"id":%q,"object":"payout","amount":1000,"arrival_date":%d,"automatic":true,"currency":"eur","status":"paid"}}}`,
				run, time.Now().Unix(), po, time.Now().Unix())
			require.Equal(t, "accepted", s.sendStripe(hook).outcome(t))
			report := func(id, cur string) []byte {
				return fmt.Appendf(nil, "automatic_payout_id,balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id\n"+
					"%s,txn_%s_%s,2026-11-29 10:00:00,2026-11-30 00:00:00,%s,10.00,0.00,10.00,topup,\n", po, run, id, cur)
			}
			ans := s.v1(http.MethodPost, "/v1/settlements/stripe", report("usd", "usd"))
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			s.projectedToHead()
			assert.Equal(t, "mismatch", s.readPayouts("stripe")[po].Status, "a USD line never proves a EUR payout")
			require.Eventually(t, func() bool { return equalStrings(s.openItems("payout_mismatch"), []string{po}) },
				30*time.Second, 50*time.Millisecond, "payout_mismatch %v", s.openItems("payout_mismatch"))

			ans = s.v1(http.MethodPost, "/v1/settlements/stripe", report("eur", "eur"))
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			s.projectedToHead()
			row := s.readPayouts("stripe")[po]
			assert.Equal(t, "reconciled", row.Status, "its EUR line proves it: %+v", row)
			assert.Equal(t, int64(1000), row.LinesNet, "lines_net is in the payout's currency")
			require.Eventually(t, func() bool { return len(s.openItems("payout_mismatch")) == 0 },
				30*time.Second, 50*time.Millisecond, "payout_mismatch %v", s.openItems("payout_mismatch"))
		})
	}
}
