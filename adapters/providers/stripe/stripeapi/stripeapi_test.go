package stripeapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi/stripefake"
	"github.com/onceledger/onceledger/domain/settlement"
)

const key = "sk_test_fake"

// harness is a fake Stripe served over a real socket and a client whose
// waits are recorded instead of slept.
type harness struct {
	fake   *stripefake.Fake
	client *stripeapi.Client
	mu     sync.Mutex
	waits  []time.Duration
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{fake: stripefake.New(key)}
	srv := httptest.NewServer(h.fake)
	t.Cleanup(srv.Close)
	c, err := stripeapi.New(srv.URL, key, srv.Client())
	require.NoError(t, err)
	c.Sleep = func(_ context.Context, d time.Duration) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.waits = append(h.waits, d)
		return nil
	}
	h.client = c
	return h
}

func bt(id, payout string, created int64, amount, fee int64, pi string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"balance_transaction","amount":%d,"fee":%d,"net":%d,"currency":"usd",
"created":%d,"available_on":%d,"exchange_rate":null,"reporting_category":"charge","type":"charge",
"source":{"id":"ch_%s","object":"charge","amount":%d,"amount_captured":%d,"currency":"usd","payment_intent":%q}}`,
		id, amount, fee, amount-fee, created, created+86400, id, amount, amount, pi)
}

func TestBalanceTransactionsByPayoutPaginates(t *testing.T) {
	h := newHarness(t)
	for i := range 250 {
		require.NoError(t, h.fake.AddBalanceTransaction("po_1", bt(fmt.Sprintf("txn_%03d", i), "po_1", 1764410000+int64(i), 1000, 30, fmt.Sprintf("pi_%d", i))))
	}
	require.NoError(t, h.fake.AddBalanceTransaction("po_2", bt("txn_other", "po_2", 1764410000, 500, 10, "pi_x")))
	require.NoError(t, h.fake.AddBalanceTransaction("po_1", []byte(`{"id":"txn_po1","object":"balance_transaction","amount":-242500,"fee":0,"net":-242500,
"currency":"usd","created":1764500000,"reporting_category":"payout","type":"payout","source":{"id":"po_1","object":"payout","amount":242500,"currency":"usd"}}`)))

	var lines []settlement.Line
	require.NoError(t, h.client.BalanceTransactions(context.Background(), stripeapi.BalanceQuery{Payout: "po_1"}, func(r report.Record) error {
		lines = append(lines, r.Line)
		return nil
	}))
	require.Len(t, lines, 251)
	var sum int64
	seen := map[string]bool{}
	for _, l := range lines {
		assert.Equal(t, "po_1", l.PayoutID)
		assert.False(t, seen[l.DedupKey()], "listed twice: %s", l.DedupKey())
		seen[l.DedupKey()] = true
		if l.Kind != settlement.KindPayout {
			sum += l.Net
		}
	}
	assert.Equal(t, int64(250*970), sum)
	assert.Equal(t, settlement.KindPayout, lines[0].Kind, "newest first")
	assert.Equal(t, "pi_249", lines[1].PaymentKey)

	reqs := h.fake.Requests()
	require.Len(t, reqs, 3)
	assert.Contains(t, reqs[0], "payout=po_1")
	assert.Contains(t, reqs[0], "expand%5B%5D=data.source")
	assert.Contains(t, reqs[1], "starting_after=txn_151")
	assert.Contains(t, reqs[2], "starting_after=txn_051")
}

func TestRetryAfterIsHonouredAndBounded(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.fake.AddPayout([]byte(`{"id":"po_1","object":"payout","amount":1811,"currency":"usd","status":"paid","automatic":true,"arrival_date":1764720000,"created":1764633600}`)))
	h.fake.RateLimit(2, "3")
	var got []stripeapi.Payout
	require.NoError(t, h.client.Payouts(context.Background(), time.Time{}, func(p stripeapi.Payout) error {
		got = append(got, p)
		return nil
	}))
	require.Len(t, got, 1)
	assert.Equal(t, int64(1811), got[0].Amount)
	assert.Equal(t, []time.Duration{3 * time.Second, 3 * time.Second}, h.waits)
	assert.Len(t, h.fake.Requests(), 3)

	// A Retry-After beyond MaxWait waits MaxWait; none at all backs off.
	h.waits = nil
	h.fake.RateLimit(1, "3600")
	require.NoError(t, h.client.Payouts(context.Background(), time.Time{}, func(stripeapi.Payout) error { return nil }))
	h.fake.RateLimit(2, "")
	require.NoError(t, h.client.Payouts(context.Background(), time.Time{}, func(stripeapi.Payout) error { return nil }))
	assert.Equal(t, []time.Duration{30 * time.Second, time.Second, 2 * time.Second}, h.waits)

	// Retries are bounded.
	h.fake.RateLimit(100, "1")
	err := h.client.Payouts(context.Background(), time.Time{}, func(stripeapi.Payout) error { return nil })
	assert.ErrorIs(t, err, stripeapi.ErrRateLimited)
}

func TestEventsBackfillLikeWebhooks(t *testing.T) {
	h := newHarness(t)
	raw, err := os.ReadFile("../testdata/charge.succeeded.json")
	require.NoError(t, err)
	require.NoError(t, h.fake.AddEvent(raw))
	require.NoError(t, h.fake.AddEvent([]byte(`{"id":"evt_old","object":"event","type":"customer.created","created":1000,"data":{"object":{"id":"cus_1"}}}`)))
	var ids []string
	require.NoError(t, h.client.Events(context.Background(), time.Unix(1764410000, 0), func(id string, b []byte) error {
		ids = append(ids, id)
		evs, err := stripe.NormalizeEvent(b)
		require.NoError(t, err)
		assert.Equal(t, id, evs[0].DedupKey, "the dedup key of a backfilled event is its id, as for its webhook")
		assert.Equal(t, "pi_3QxYzA2eZvKYlo2C1PJqQe7b", evs[0].PaymentKey)
		return nil
	}))
	assert.Equal(t, []string{"evt_3QxYzA2eZvKYlo2C1x5Gh2aP"}, ids, "created[gte] leaves the old event out")
}

func TestSyncPayouts(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.fake.AddPayout([]byte(`{"id":"po_1","object":"payout","amount":970,"currency":"usd","status":"paid","automatic":true,"arrival_date":1764720000,"created":1764633600}`)))
	require.NoError(t, h.fake.AddPayout([]byte(`{"id":"po_manual","object":"payout","amount":5,"currency":"usd","status":"paid","automatic":false,"arrival_date":1764720000,"created":1764633600}`)))
	require.NoError(t, h.fake.AddBalanceTransaction("po_1", bt("txn_1", "po_1", 1764410000, 1000, 30, "pi_1")))
	n := 0
	require.NoError(t, h.client.SyncPayouts(context.Background(), "", time.Time{}, func(r report.Record) error {
		n++
		assert.Equal(t, "po_1", r.Line.PayoutID)
		return nil
	}))
	assert.Equal(t, 1, n)
}

func TestUnauthorized(t *testing.T) {
	fake := stripefake.New(key)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c, err := stripeapi.New(srv.URL, "sk_wrong", srv.Client())
	require.NoError(t, err)
	err = c.Events(context.Background(), time.Time{}, func(string, []byte) error { return nil })
	var apiErr *stripeapi.APIError
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, 401, apiErr.Status)
	assert.Contains(t, apiErr.Message, "Invalid API Key")

	_, err = stripeapi.New("ftp://x", key, nil)
	assert.Error(t, err)
	_, err = stripeapi.New("", "", nil)
	assert.Error(t, err)
}

// The fake renders a line as the balance transaction the client maps back
// to the same line.
func TestFakeBalanceTransactionRoundTrip(t *testing.T) {
	h := newHarness(t)
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	want := []settlement.Line{
		{Provider: "stripe", Kind: settlement.KindCharge, LineID: "txn_1", PaymentKey: "pi_1", CaptureID: "ch_1",
			Gross: 1234, Fee: 66, Net: 1168, Currency: "USD", OriginalAmount: 1000, OriginalCurrency: "EUR",
			ExchangeRate: "1.234", PayoutID: "po_1", OccurredAt: at, AvailableOn: at.Add(48 * time.Hour)},
		{Provider: "stripe", Kind: settlement.KindRefund, LineID: "txn_2", PaymentKey: "ch_legacy", CaptureID: "ch_legacy",
			RefundID: "re_1", Gross: -500, Net: -500, Currency: "USD", OriginalAmount: -500, OriginalCurrency: "USD",
			PayoutID: "po_1", OccurredAt: at.Add(time.Hour)},
		{Provider: "stripe", Kind: settlement.KindPayout, LineID: "txn_3", Gross: -668, Net: -668, Currency: "USD",
			OriginalAmount: -668, OriginalCurrency: "USD", PayoutID: "po_1", OccurredAt: at.Add(2 * time.Hour)},
	}
	for i, l := range want {
		require.NoError(t, h.fake.AddBalanceTransaction("po_1", stripefake.BalanceTransaction(l)))
		want[i].SourceType = string(l.Kind) // the reporting category, as the importer reads it
	}
	var got []settlement.Line
	require.NoError(t, h.client.BalanceTransactions(context.Background(), stripeapi.BalanceQuery{Payout: "po_1"}, func(r report.Record) error {
		got = append([]settlement.Line{r.Line}, got...) // listed newest first
		return nil
	}))
	assert.Equal(t, want, got)
}

// A payout's balance transaction, its source expanded, carries the
// payout's trace id (when Stripe's status is "supported") and statement
// descriptor to its line: what a bank statement line may name it by.
func TestPayoutLineCarriesTraceID(t *testing.T) {
	h := newHarness(t)
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	add := func(txn, po, trace string) {
		var m map[string]any
		require.NoError(t, json.Unmarshal(stripefake.BalanceTransaction(settlement.Line{Provider: "stripe", Kind: settlement.KindPayout,
			LineID: txn, Gross: -668, Net: -668, Currency: "USD", PayoutID: po, OccurredAt: at}), &m))
		src := m["source"].(map[string]any)
		src["statement_descriptor"] = "ACME WEEKLY"
		src["trace_id"] = map[string]any{"status": trace, "value": "021000021234567"}
		if trace != "supported" {
			src["trace_id"] = map[string]any{"status": trace, "value": nil}
		}
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		require.NoError(t, h.fake.AddBalanceTransaction(po, raw))
	}
	add("txn_1", "po_1", "supported")
	add("txn_2", "po_2", "pending")
	got := map[string]settlement.Line{}
	for _, po := range []string{"po_1", "po_2"} {
		require.NoError(t, h.client.BalanceTransactions(context.Background(), stripeapi.BalanceQuery{Payout: po}, func(r report.Record) error {
			got[po] = r.Line
			return nil
		}))
	}
	assert.Equal(t, []string{"021000021234567", "ACME WEEKLY"}, []string{got["po_1"].PayoutTraceID, got["po_1"].PayoutDescriptor})
	assert.Equal(t, []string{"", "ACME WEEKLY"}, []string{got["po_2"].PayoutTraceID, got["po_2"].PayoutDescriptor})
}
