package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
)

// TestConsoleFiguresMatchAPI reads the figures of the overview, a payment,
// the payouts and the periods in the browser and compares each with the
// /v1 answer for it: the console and the API read the same query
// functions, so they must agree to the cent (a settlement fee included).
func TestConsoleFiguresMatchAPI(t *testing.T) {
	tab := browser(t)
	live := startLiveApp(t)
	s := live.seed()
	_, err := live.app.Pool().Exec(context.Background(), `INSERT INTO payouts (provider, payout_id, amount, currency,
		arrival_date, paid, status, line_count, lines_net, difference, updated_at)
		VALUES ('standard', 'po_short', 1234567, 'EUR', now(), true, 'mismatch', 1, 9700, -300, now())`)
	require.NoError(t, err)
	// A fee only the settlement report knew: the page and the API both
	// take the ledger's fee.
	typ, data, err := payment.Encode(payment.FeeSettled{Meta: payment.Meta{Provider: "standard", PaymentKey: s.paymentID,
		DedupKey: "settle:txn_fee", OccurredAt: time.Now().UTC()}, LineID: "txn_fee", Fee: 66, Currency: "USD"})
	require.NoError(t, err)
	_, err = live.app.Events().Store.Append(context.Background(), "payment-standard-"+s.paymentID, eventstore.Any,
		[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: data}})
	require.NoError(t, err)
	live.waitProjected()
	signInAs(t, tab, live.base, readToken)
	api := func(path string, v any) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, live.base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+readToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	}
	page := func(path, js string) map[string]string {
		t.Helper()
		do(t, tab, chromedp.Navigate(live.base+path))
		got, err := chromedp.Run(tab, chromedp.Evaluate[map[string]string](js))
		require.NoError(t, err, path)
		for k, v := range got {
			got[k] = strings.ReplaceAll(strings.TrimSpace(v), "\u202f", "") // the digit grouping
		}
		return got
	}

	var bals struct {
		Balances []struct {
			Currency string
			Balance  int64
		}
	}
	api("/v1/balances", &bals)
	debits := map[string]int64{}
	for _, b := range bals.Balances {
		debits[b.Currency] += max(b.Balance, 0)
	}
	trial := page("/console", `Object.fromEntries(Array.from(document.querySelectorAll("#trial tr[data-currency]"),
		tr => [tr.dataset.currency, tr.cells[1].textContent]))`)
	require.NotEmpty(t, trial)
	for c, n := range debits {
		assert.Equal(t, money.FormatMinor(n, money.Currency(c)), trial[c], "overview debits in %s", c)
	}

	var pay struct {
		AmountsDecimal map[string]string `json:"amounts_decimal"`
	}
	api("/v1/payments/standard/"+s.paymentID, &pay)
	fig := page("/console/payments/standard/"+s.paymentID, `({fee: document.querySelector("#payment-fee").textContent,
		captured: document.querySelector("#payment-captured").textContent.split(" ")[0]})`)
	assert.Equal(t, "37.16", pay.AmountsDecimal["fees"], "36.50 from the webhook, 0.66 from settlement")
	assert.Equal(t, pay.AmountsDecimal["fees"], fig["fee"])
	assert.Equal(t, pay.AmountsDecimal["captured"], strings.Fields(fig["captured"])[0])

	var payouts struct {
		Payouts []struct {
			Provider, Status string
			PayoutID         string `json:"payout_id"`
			AmountDecimal    string `json:"amount_decimal"`
		}
	}
	api("/v1/payouts", &payouts)
	rows := page("/console/payouts", `Object.fromEntries(Array.from(document.querySelectorAll("#payouts tr[data-payout]"),
		tr => [tr.dataset.payout, tr.cells[2].textContent + " " + tr.cells[5].textContent]))`)
	require.Len(t, rows, len(payouts.Payouts))
	for _, p := range payouts.Payouts {
		assert.Equal(t, p.AmountDecimal+" "+p.Status, rows[p.Provider+"/"+p.PayoutID])
	}

	p := period.Of(time.Now().UTC(), time.UTC).String()
	var tb struct {
		Lines []struct {
			Currency        string
			Debits, Credits int64
		}
	}
	api("/v1/periods/"+p+"/trial-balance", &tb)
	sums := map[string]int64{}
	for _, l := range tb.Lines {
		sums[l.Currency] += l.Debits
	}
	totals := page("/console/periods", `Object.fromEntries(Array.from(document.querySelectorAll("#totals-`+p+` tr[data-currency]"),
		tr => [tr.dataset.currency, tr.cells[1].textContent]))`)
	require.NotEmpty(t, totals)
	for c, n := range sums {
		assert.Equal(t, money.FormatMinor(n, money.Currency(c)), totals[c], "period %s debits in %s", p, c)
	}
}
