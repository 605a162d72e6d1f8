package main_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type listedAssertion struct {
	Account    string `json:"account"`
	Stated     int64  `json:"stated"`
	Ledger     int64  `json:"ledger"`
	Difference int64  `json:"difference"`
	Status     string `json:"status"`
	Actor      string `json:"actor"`
}

// assertions polls GET /v1/balance-assertions?query until ok holds.
func (s *actStack) assertions(query string, ok func([]listedAssertion) bool) []listedAssertion {
	s.t.Helper()
	var got []listedAssertion
	require.Eventually(s.t, func() bool {
		a := s.do(http.MethodGet, "/v1/balance-assertions?"+query, actRead, nil, nil)
		var v struct{ Assertions []listedAssertion }
		if a.Status != http.StatusOK || json.Unmarshal([]byte(a.Body), &v) != nil {
			return false
		}
		got = v.Assertions
		return ok(got)
	}, 30*time.Second, 20*time.Millisecond, "assertions %s: last %+v", query, got)
	return got
}

// A person states a provider's balance; the ledger compares it as of its
// moment; a difference opens one balance_mismatch item, which an
// adjustment (postings balanced per currency, actor and note) resolves,
// making the assertion agree. Bad input is 400 naming the field, nothing
// recorded; a read token is 403. Both stores.
func TestBalanceAssertionsAndAdjustments(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := startActStack(t, kind)
			pay := uniq("pay")
			s.deliver(uniq("msg"), "payment.captured", map[string]any{"payment_id": pay, "capture_id": "cap_" + pay,
				"amount": 1000, "currency": "USD", "fee": 30})
			at := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
			later := time.Now().Add(2 * time.Minute).UTC().Format(time.RFC3339)
			body := func(amount any) map[string]any {
				return map[string]any{"provider": "standard", "account": "provider:standard:balance", "currency": "USD",
					"as_of": at, "amount": amount, "source": "dashboard"}
			}
			assert.Equal(t, http.StatusForbidden, s.post("/v1/balance-assertions", actRead, body(970)).Status)
			for _, c := range []struct {
				field string
				body  map[string]any
			}{
				{"account", map[string]any{"account": "revenue:nowhere", "currency": "USD", "as_of": at, "amount": 1, "source": "x"}},
				{"account", map[string]any{"account": "provider:nobody:balance", "currency": "USD", "as_of": at, "amount": 1, "source": "x"}},
				{"currency", map[string]any{"account": "provider:standard:balance", "currency": "XAU", "as_of": at, "amount": 1, "source": "x"}},
				{"amount", map[string]any{"account": "provider:standard:balance", "currency": "USD", "as_of": at, "amount": "9.701", "source": "x"}},
				{"amount", map[string]any{"account": "provider:standard:balance", "currency": "USD", "as_of": at, "amount": 9.7, "source": "x"}},
				{"as_of", map[string]any{"account": "provider:standard:balance", "currency": "USD", "as_of": "yesterday", "amount": 1, "source": "x"}},
			} {
				a := s.post("/v1/balance-assertions", actAdmin, c.body)
				assert.Equal(t, http.StatusBadRequest, a.Status, "%s: %s", c.field, a.Body)
				assert.Contains(t, a.Body, c.field+": ", a.Body)
			}
			s.assertions("provider=standard", func(l []listedAssertion) bool { return len(l) == 0 })
			require.Equal(t, http.StatusOK, s.post("/v1/balance-assertions", actAdmin, body("9.70")).Status)
			s.assertions("provider=standard", func(l []listedAssertion) bool {
				return len(l) == 1 && l[0].Status == "agreed" && l[0].Ledger == 970 && l[0].Actor == "ops"
			})
			b := body(1970)
			b["as_of"] = later
			require.Equal(t, http.StatusOK, s.post("/v1/balance-assertions", actAdmin, b).Status)
			d := s.assertions("provider=standard&status=differs", func(l []listedAssertion) bool { return len(l) == 1 })
			assert.Equal(t, int64(-1000), d[0].Difference)
			item := s.item("", "balance_mismatch", func(it listedItem) bool { return it.Status == "open" })

			adj := map[string]any{"item_id": item.ID, "note": "capture the webhook never told",
				"postings": []map[string]any{{"account": "provider:standard:balance", "currency": "USD", "amount": 1000},
					{"account": "revenue:sales", "currency": "USD", "amount": -999}}}
			a := s.post("/v1/adjustments", actAdmin, adj)
			assert.Equal(t, http.StatusBadRequest, a.Status, a.Body)
			assert.Contains(t, a.Body, "postings: ")
			adj["postings"].([]map[string]any)[1]["amount"] = -1000
			assert.Equal(t, http.StatusForbidden, s.post("/v1/adjustments", actRead, adj).Status)
			a = s.post("/v1/adjustments", actAdmin, adj)
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			s.assertions("provider=standard&status=differs", func(l []listedAssertion) bool { return len(l) == 0 })
			res := s.item("", "balance_mismatch", func(it listedItem) bool { return it.Status == "resolved" })
			assert.Equal(t, "ops", res.ResolvedBy)

			// The journal shows who made the adjustment's entries.
			require.Eventually(t, func() bool {
				a := s.do(http.MethodGet, "/v1/journal", actRead, nil, nil)
				var j struct {
					Journal []struct {
						Account string `json:"account"`
						Actor   string `json:"actor"`
					} `json:"journal"`
				}
				if a.Status != http.StatusOK || json.Unmarshal([]byte(a.Body), &j) != nil {
					return false
				}
				n := 0
				for _, e := range j.Journal {
					if e.Actor == "ops" {
						n++
					}
				}
				return n == 2
			}, 30*time.Second, 20*time.Millisecond, "the adjustment's two entries name their actor")

			// An opening balance: an event with actor and note; a second is 409.
			open := map[string]any{"account": "provider:standard:reserve", "currency": "USD", "as_of": at, "amount": 500, "note": "reserve before the ledger"}
			assert.Equal(t, http.StatusBadRequest, s.post("/v1/opening-balances", actAdmin, map[string]any{"account": "provider:standard:reserve",
				"currency": "USD", "as_of": at, "amount": 500}).Status, "a note is required")
			require.Equal(t, http.StatusOK, s.post("/v1/opening-balances", actAdmin, open).Status)
			assert.Equal(t, http.StatusConflict, s.post("/v1/opening-balances", actAdmin, open).Status)
		})
	}
}

// In a closed period: an opening balance dated there is 400, nothing
// recorded; an adjustment effective there is booked into the first open
// period, marked a late adjustment of the closed one.
func TestAdjustmentIntoAClosedPeriod(t *testing.T) {
	s := startActStack(t, onPostgres)
	pay := uniq("pay")
	s.deliver(uniq("msg"), "payment.captured", map[string]any{"payment_id": pay, "capture_id": "cap_" + pay,
		"amount": 1000, "currency": "USD", "fee": 30})
	require.Equal(t, http.StatusOK, s.post("/v1/periods/2026-10/close", actAdmin, map[string]any{"note": "month end"}).Status)
	a := s.post("/v1/opening-balances", actAdmin, map[string]any{"account": "provider:standard:balance", "currency": "USD",
		"as_of": "2026-10-15T00:00:00Z", "amount": 100, "note": "late"})
	assert.Equal(t, http.StatusBadRequest, a.Status, a.Body)
	assert.Contains(t, a.Body, "as_of: ")

	at := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	require.Equal(t, http.StatusOK, s.post("/v1/balance-assertions", actAdmin, map[string]any{"account": "provider:standard:balance",
		"currency": "USD", "as_of": at, "amount": 960, "source": "dashboard"}).Status)
	item := s.item("", "balance_mismatch", func(it listedItem) bool { return it.Status == "open" })
	a = s.post("/v1/adjustments", actAdmin, map[string]any{"item_id": item.ID, "note": "October fee", "effective_at": "2026-10-20T12:00:00Z",
		"postings": []map[string]any{{"account": "expenses:fees:standard", "currency": "USD", "amount": 10},
			{"account": "provider:standard:balance", "currency": "USD", "amount": -10}}})
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Eventually(t, func() bool {
		a := s.do(http.MethodGet, "/v1/journal?from=2026-10-01&to=2026-10-31", actRead, nil, nil)
		var j struct {
			Journal []struct {
				Actor  string `json:"actor"`
				Late   bool   `json:"late_adjustment"`
				Period string `json:"period"`
			} `json:"journal"`
		}
		if a.Status != http.StatusOK || json.Unmarshal([]byte(a.Body), &j) != nil || len(j.Journal) != 2 {
			return false
		}
		for _, e := range j.Journal {
			if e.Actor != "ops" || !e.Late || e.Period == "2026-10" {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the adjustment is a late one, booked into an open period, with its actor")
	s.assertions("provider=standard&status=agreed", func(l []listedAssertion) bool { return len(l) == 1 })
}

// A balance_mismatch item resolved by hand stays resolved until the
// figures change: a later balance that differs otherwise opens it again.
// An adjustment is undone by another naming it, never edited: twice is 409.
func TestBalanceMismatchResolvedByHandAndReversal(t *testing.T) {
	s := startActStack(t, onPostgres)
	pay := uniq("pay")
	s.deliver(uniq("msg"), "payment.captured", map[string]any{"payment_id": pay, "capture_id": "cap_" + pay,
		"amount": 1000, "currency": "USD", "fee": 30})
	state := func(at time.Time, amount int64) {
		require.Equal(t, http.StatusOK, s.post("/v1/balance-assertions", actAdmin, map[string]any{"account": "provider:standard:balance",
			"currency": "USD", "as_of": at.UTC().Format(time.RFC3339), "amount": amount, "source": "dashboard"}).Status)
	}
	now := time.Now()
	state(now.Add(time.Minute), 900)
	item := s.item("", "balance_mismatch", func(it listedItem) bool { return it.Status == "open" })
	a := s.post("/v1/reconciliation/resolve", actAdmin, map[string]string{"id": item.ID, "note": "Stripe-side hold, known"})
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	res := s.item("", "balance_mismatch", func(it listedItem) bool { return it.Status == "resolved" })
	assert.Equal(t, "ops", res.ResolvedBy)
	state(now.Add(2*time.Minute), 800)
	s.item("", "balance_mismatch", func(it listedItem) bool { return it.Status == "open" && it.ResolvedBy == "" })

	adj := map[string]any{"item_id": item.ID, "note": "write off", "postings": []map[string]any{
		{"account": "expenses:writeoffs", "currency": "USD", "amount": 170}, {"account": "provider:standard:balance", "currency": "USD", "amount": -170}}}
	a = s.post("/v1/adjustments", actAdmin, adj)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	var made struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(a.Body), &made))
	rev := map[string]any{"item_id": item.ID, "note": "wrong account", "reverses": made.ID}
	a = s.post("/v1/adjustments", actAdmin, rev)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	assert.Contains(t, a.Body, `"amount":-170`)
	assert.Equal(t, http.StatusConflict, s.post("/v1/adjustments", actAdmin, rev).Status, "reversed already")
	s.assertions("provider=standard&status=differs", func(l []listedAssertion) bool { return len(l) == 2 })
}
