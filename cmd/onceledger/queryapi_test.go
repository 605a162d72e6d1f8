package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

const (
	qToken1 = "tok-first-0123456789"
	qToken2 = "tok-second-abcdefghij"
)

var qT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// These are the /v1 API's end-to-end tests: the HTTP layer imports no
// storage adapter, so they live here, where the adapters are wired.

// qapi is the query API on a fresh database behind a real socket. Read-model
// rows are inserted with SQL (the projector is not under test here); events
// are appended to the real Postgres event store.
type qapi struct {
	t     *testing.T
	pool  *pgxpool.Pool
	store *postgres.EventStore
	srv   *httptest.Server
}

func newQAPI(t *testing.T) *qapi {
	t.Helper()
	pool := pgtest.NewPool(t)
	return startQAPI(t, pool, httpapi.Config{APITokens: []string{qToken1, qToken2}})
}

func startQAPI(t *testing.T, pool *pgxpool.Pool, cfg httpapi.Config) *qapi {
	t.Helper()
	store := postgres.NewEventStore(pool)
	if cfg.Events == nil {
		cfg.Events = store
	}
	if cfg.Query == nil {
		cfg.Query = readmodel.New(pool)
	}
	if cfg.Projections == nil {
		cfg.Projections = projections.StatusReader{Feed: store, DB: readmodel.New(pool)}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(httpapi.NewHandler(cfg))
	t.Cleanup(srv.Close)
	return &qapi{t: t, pool: pool, store: store, srv: srv}
}

// do sends GET path with "Authorization: <auth>" (none when empty).
func (a *qapi) do(path, auth string) (*http.Response, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.srv.URL+path, nil)
	require.NoError(a.t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := a.srv.Client().Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return resp, body
}

// getJSON GETs path with a valid token, requires 200 and decodes the body.
func (a *qapi) getJSON(path string, v any) http.Header {
	a.t.Helper()
	resp, body := a.do(path, "Bearer "+qToken1)
	require.Equal(a.t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
	require.Equal(a.t, "application/json", resp.Header.Get("Content-Type"))
	require.NoError(a.t, json.Unmarshal(body, v), "GET %s: %s", path, body)
	return resp.Header
}

// getCSV GETs path with format=csv, requires 200 and parses the body as
// RFC 4180 CSV: the header row, then the records.
func (a *qapi) getCSV(path string) ([]string, [][]string, http.Header) {
	a.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	resp, body := a.do(path+sep+"format=csv", "Bearer "+qToken2)
	require.Equal(a.t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
	require.True(a.t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv"), resp.Header.Get("Content-Type"))
	require.True(a.t, len(body) == 0 || strings.HasSuffix(string(body), "\r\n"), "CRLF line ends")
	records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	require.NoError(a.t, err, "%s", body)
	require.NotEmpty(a.t, records, "a header row")
	return records[0], records[1:], resp.Header
}

// entry inserts one ledger entry and keeps account_balances in step, as the
// ledger projector does.
func (a *qapi) entry(account, currency string, amount int64, occurred time.Time) int64 {
	a.t.Helper()
	return qInsertEntry(a.t, a.pool, account, currency, amount, occurred)
}

// qPosition numbers the entries' feed positions (position_prepare), in
// insertion order as the ledger projector writes them: the journal pages in
// that order.
var qPosition atomic.Int64

func qInsertEntry(t testing.TB, pool *pgxpool.Pool, account, currency string, amount int64, occurred time.Time) int64 {
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Errorf("begin: %v", err)
		return 0
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var id int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO ledger_entries (event_id, posting_index, stream_id, event_type, provider, account,
			currency, amount, occurred_at, recorded_at, position_commit, position_prepare, period)
		VALUES ($1, 0, 'payment-test-p1', 'payment.captured', 'test', $2, $3, $4, $5, $5, 7, $6,
			to_char($5::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM'))
		RETURNING id`, uuid.New(), account, currency, amount, occurred, qPosition.Add(1)).Scan(&id); err != nil {
		t.Errorf("insert entry: %v", err)
		return 0
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO account_balances (account, currency, balance, entry_count, updated_at)
		VALUES ($1, $2, $3, 1, now())
		ON CONFLICT (account, currency) DO UPDATE
		SET balance = account_balances.balance + excluded.balance, entry_count = account_balances.entry_count + 1`,
		account, currency, amount); err != nil {
		t.Errorf("upsert balance: %v", err)
		return 0
	}
	if err := tx.Commit(ctx); err != nil {
		t.Errorf("commit: %v", err)
		return 0
	}
	return id
}

func (a *qapi) exec(sql string, args ...any) {
	a.t.Helper()
	_, err := a.pool.Exec(context.Background(), sql, args...)
	require.NoError(a.t, err)
}

func TestQueryBalancesJSONAndCSV(t *testing.T) {
	a := newQAPI(t)

	// An empty ledger is an empty list, not null.
	resp, body := a.do("/v1/balances", "Bearer "+qToken1)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"balances":[]}`, string(body))
	h, rows, _ := a.getCSV("/v1/balances")
	assert.Equal(t, []string{"account", "currency", "balance", "balance_decimal"}, h)
	assert.Empty(t, rows)

	a.entry("revenue:sales", "USD", -1000, qT0)
	a.entry("revenue:sales", "USD", -1, qT0.Add(2*time.Hour))
	a.entry("revenue:sales", "JPY", -1500, qT0)
	a.entry("revenue:sales", "KWD", -12345, qT0)
	a.entry("provider:stripe:balance", "USD", 970, qT0)
	a.entry("expenses:fees:stripe", "USD", 30, qT0)
	a.entry("provider:stripe:balance", "KWD", 5, qT0)

	// The contract's exact shape: account, currency, balance (a number).
	var raw struct {
		Balances []map[string]any `json:"balances"`
	}
	a.getJSON("/v1/balances?account=revenue:sales&currency=USD", &raw)
	require.Len(t, raw.Balances, 1)
	assert.Equal(t, "revenue:sales", raw.Balances[0]["account"])
	assert.Equal(t, "USD", raw.Balances[0]["currency"])
	assert.Equal(t, float64(-1001), raw.Balances[0]["balance"])
	assert.Equal(t, "-10.01", raw.Balances[0]["balance_decimal"])

	type bal struct {
		Account, Currency string
		Balance           int64
		BalanceDecimal    string `json:"balance_decimal"`
	}
	var all struct{ Balances []bal }
	a.getJSON("/v1/balances", &all)
	assert.Equal(t, []bal{
		{"expenses:fees:stripe", "USD", 30, "0.30"},
		{"provider:stripe:balance", "KWD", 5, "0.005"},
		{"provider:stripe:balance", "USD", 970, "9.70"},
		{"revenue:sales", "JPY", -1500, "-1500"},
		{"revenue:sales", "KWD", -12345, "-12.345"},
		{"revenue:sales", "USD", -1001, "-10.01"},
	}, all.Balances)

	h, rows, _ = a.getCSV("/v1/balances")
	assert.Equal(t, []string{"account", "currency", "balance", "balance_decimal"}, h)
	assert.Equal(t, [][]string{
		{"expenses:fees:stripe", "USD", "30", "0.30"},
		{"provider:stripe:balance", "KWD", "5", "0.005"},
		{"provider:stripe:balance", "USD", "970", "9.70"},
		{"revenue:sales", "JPY", "-1500", "-1500"},
		{"revenue:sales", "KWD", "-12345", "-12.345"},
		{"revenue:sales", "USD", "-1001", "-10.01"},
	}, rows)

	// Prefix filter, currency in any case.
	var some struct{ Balances []bal }
	a.getJSON("/v1/balances?account=provider:&currency=kwd", &some)
	assert.Equal(t, []bal{{"provider:stripe:balance", "KWD", 5, "0.005"}}, some.Balances)

	// as_of sums the entries that occurred up to then (inclusive), here
	// given with a non-UTC offset.
	asOf := url.QueryEscape(qT0.Add(time.Hour).In(time.FixedZone("", 3600)).Format(time.RFC3339))
	_, rows, _ = a.getCSV("/v1/balances?currency=USD&account=revenue:&as_of=" + asOf)
	assert.Equal(t, [][]string{{"revenue:sales", "USD", "-1000", "-10.00"}}, rows)
	_, rows, _ = a.getCSV("/v1/balances?currency=USD&account=revenue:&as_of=" + url.QueryEscape(qT0.Add(2*time.Hour).Format(time.RFC3339)))
	assert.Equal(t, [][]string{{"revenue:sales", "USD", "-1001", "-10.01"}}, rows)
	_, rows, _ = a.getCSV("/v1/balances?as_of=" + url.QueryEscape(qT0.Add(-time.Nanosecond).Format(time.RFC3339Nano)))
	assert.Empty(t, rows)
}

// TestQueryLargeCSVIsStreamed: a large answer goes out chunked, as rows are
// read, and a failure after the first byte aborts the answer instead of
// ending it well-formed but short.
func TestQueryLargeCSVIsStreamed(t *testing.T) {
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(context.Background(), `
		INSERT INTO account_balances (account, currency, balance, entry_count, updated_at)
		SELECT 'acct:' || lpad(i::text, 6, '0'), 'USD', i, 1, now() FROM generate_series(1, 20000) i`)
	require.NoError(t, err)
	a := startQAPI(t, pool, httpapi.Config{APITokens: []string{qToken1, qToken2}})
	req, err := http.NewRequest(http.MethodGet, a.srv.URL+"/v1/balances?format=csv", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+qToken1)
	resp, err := a.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(-1), resp.ContentLength, "streamed, so the length is not known up front")
	assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	records, err := csv.NewReader(resp.Body).ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 20001)
	assert.Equal(t, []string{"acct:020000", "USD", "20000", "200.00"}, records[20000])

	broken := startQAPI(t, pool, httpapi.Config{
		APITokens: []string{qToken1},
		Query:     failAfter{QueryStore: readmodel.New(pool), n: 5000},
	})
	for _, f := range []string{"csv", "json"} {
		req, err = http.NewRequest(http.MethodGet, broken.srv.URL+"/v1/balances?format="+f, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+qToken1)
		resp, err = broken.srv.Client().Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "rows were on their way before the failure")
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Error(t, err, "%s: a truncated answer must not read as complete", f)
	}
	// A failure before the first row is an ordinary error answer.
	early := startQAPI(t, pool, httpapi.Config{
		APITokens: []string{qToken1},
		Query:     failAfter{QueryStore: readmodel.New(pool), n: 0},
	})
	r, body := early.do("/v1/balances?format=csv", "Bearer "+qToken1)
	assert.Equal(t, http.StatusServiceUnavailable, r.StatusCode)
	assert.Contains(t, string(body), `"error"`)
}

// failAfter wraps the real query store; its balances fail after n rows, as a
// connection lost mid-query would.
type failAfter struct {
	httpapi.QueryStore
	n int
}

func (f failAfter) Balances(ctx context.Context, flt views.BalanceFilter, fn func(views.Balance) error) error {
	i := 0
	return f.QueryStore.Balances(ctx, flt, func(b views.Balance) error {
		if i == f.n {
			return fmt.Errorf("connection lost: %w", eventstore.ErrUnavailable)
		}
		i++
		return fn(b)
	})
}

type qEntryJSON struct {
	ID            int64     `json:"id"`
	EventID       string    `json:"event_id"`
	PostingIndex  int       `json:"posting_index"`
	Account       string    `json:"account"`
	Currency      string    `json:"currency"`
	Amount        int64     `json:"amount"`
	AmountDecimal string    `json:"amount_decimal"`
	OccurredAt    time.Time `json:"occurred_at"`
	Position      struct{ Commit, Prepare uint64 }
}

type qPage struct {
	Entries    []qEntryJSON `json:"entries"`
	NextCursor *string      `json:"next_cursor"`
}

func TestQueryLedgerEntriesJSONAndCSV(t *testing.T) {
	a := newQAPI(t)
	currencies := []string{"USD", "JPY", "KWD"}
	var ids []int64
	for i := 0; i < 25; i++ {
		ids = append(ids, a.entry("provider:stripe:balance", currencies[i%3], int64(1000+i), qT0.Add(time.Duration(i)*time.Minute)))
	}
	other := a.entry("revenue:sales", "USD", -7, qT0)

	// JSON pages of 10: 10, 10, 5; the last has an empty next_cursor.
	var seen []int64
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		var p qPage
		h := a.getJSON("/v1/ledger/entries?account=provider:&limit=10&cursor="+url.QueryEscape(cursor), &p)
		require.NotNil(t, p.NextCursor, "next_cursor is always present")
		assert.Equal(t, *p.NextCursor, h.Get("Next-Cursor"))
		for _, e := range p.Entries {
			seen = append(seen, e.ID)
		}
		if *p.NextCursor == "" {
			require.Len(t, p.Entries, 5)
			break
		}
		require.Len(t, p.Entries, 10)
		cursor = *p.NextCursor
	}
	assert.Equal(t, ids, seen)

	var p qPage
	a.getJSON("/v1/ledger/entries?limit=1", &p)
	require.Len(t, p.Entries, 1)
	e := p.Entries[0]
	assert.Equal(t, ids[0], e.ID)
	assert.Equal(t, int64(1000), e.Amount)
	assert.Equal(t, "10.00", e.AmountDecimal)
	assert.True(t, e.OccurredAt.Equal(qT0))
	assert.Equal(t, uint64(7), e.Position.Commit)
	assert.Positive(t, e.Position.Prepare)
	_, err := uuid.Parse(e.EventID)
	require.NoError(t, err)

	// Default limit (100) covers everything; currency filter.
	a.getJSON("/v1/ledger/entries?currency=usd", &p)
	require.Len(t, p.Entries, 10)
	assert.Equal(t, other, p.Entries[9].ID)
	assert.Equal(t, "", *p.NextCursor)

	// from inclusive, to exclusive.
	from := url.QueryEscape(qT0.Add(3 * time.Minute).Format(time.RFC3339))
	to := url.QueryEscape(qT0.Add(6 * time.Minute).Format(time.RFC3339))
	a.getJSON("/v1/ledger/entries?account=provider:stripe:balance&from="+from+"&to="+to, &p)
	assert.Equal(t, []int64{ids[3], ids[4], ids[5]}, []int64{p.Entries[0].ID, p.Entries[1].ID, p.Entries[2].ID})
	require.Len(t, p.Entries, 3)

	// CSV pages carry the cursor in the Next-Cursor header; decimals per
	// currency exponent.
	header, rows, h := a.getCSV("/v1/ledger/entries?account=provider:&limit=3")
	assert.Equal(t, []string{
		"id", "event_id", "posting_index", "stream_id", "event_type", "provider", "account",
		"currency", "amount", "amount_decimal", "occurred_at", "recorded_at",
		"position_commit", "position_prepare",
	}, header)
	require.Len(t, rows, 3)
	col := func(name string) int {
		for i, c := range header {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	got := map[string][2]string{}
	for _, r := range rows {
		got[r[col("currency")]] = [2]string{r[col("amount")], r[col("amount_decimal")]}
	}
	assert.Equal(t, map[string][2]string{
		"USD": {"1000", "10.00"}, "JPY": {"1001", "1001"}, "KWD": {"1002", "1.002"},
	}, got)
	assert.Equal(t, qT0.Format(time.RFC3339Nano), rows[0][col("occurred_at")])
	next := h.Get("Next-Cursor")
	assert.NotEmpty(t, next)
	_, rows2, _ := a.getCSV("/v1/ledger/entries?account=provider:&limit=3&cursor=" + url.QueryEscape(next))
	assert.Equal(t, strconv.FormatInt(ids[3], 10), rows2[0][col("id")])
}

// TestQueryLedgerPagingUnderConcurrentInserts pages through the journal
// while several writers append to it: every entry that existed when paging
// started is seen exactly once, and the order never goes back.
func TestQueryLedgerPagingUnderConcurrentInserts(t *testing.T) {
	a := newQAPI(t)
	const initial = 400
	existing := map[int64]bool{}
	for i := 0; i < initial; i++ {
		existing[a.entry(fmt.Sprintf("provider:p%d:balance", i%4), "USD", int64(i+1), qT0)] = true
	}

	stop := make(chan struct{})
	var inserted atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if qInsertEntry(t, a.pool, "provider:p0:balance", "USD", 1, qT0) == 0 {
					return
				}
				inserted.Add(1)
			}
		}()
	}
	stopped := false
	stopWriters := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopWriters()

	seen := map[int64]int{}
	var last uint64
	cursor, pages := "", 0
	for ; ; pages++ {
		require.Less(t, pages, 10000, "paging must end")
		var p qPage
		a.getJSON("/v1/ledger/entries?account=provider:&limit=13&cursor="+url.QueryEscape(cursor), &p)
		for _, e := range p.Entries {
			require.Greater(t, e.Position.Prepare, last, "order is stable: feed positions only grow across pages")
			last = e.Position.Prepare
			seen[e.ID]++
		}
		missing := 0
		for id := range existing {
			if seen[id] == 0 {
				missing++
			}
		}
		// Once every original entry went by, let the writers finish so
		// that paging reaches the end.
		if missing == 0 {
			stopWriters()
		}
		if *p.NextCursor == "" {
			break
		}
		cursor = *p.NextCursor
	}
	stopWriters()
	require.Greater(t, inserted.Load(), int64(0), "writers ran during paging")
	for id := range existing {
		assert.Equal(t, 1, seen[id], "entry %d", id)
	}
	for id, n := range seen {
		assert.Equal(t, 1, n, "entry %d repeated", id)
	}
	require.Greater(t, pages, initial/13)
	t.Logf("%d pages, %d entries seen, %d inserted concurrently", pages+1, len(seen), inserted.Load())
}

func TestQueryPayment(t *testing.T) {
	a := newQAPI(t)
	ctx := context.Background()
	meta := payment.Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1", OccurredAt: qT0}
	evs := []payment.Event{
		payment.Authorized{Meta: meta, AuthorizationID: "ch_1", Amount: 1000, Currency: "USD"},
		payment.Captured{Meta: meta, CaptureID: "ch_1", Amount: 1000, Fee: 30, Currency: "USD"},
		payment.RefundPosted{Meta: meta, RefundID: "re_1", Amount: 200, Currency: "USD"},
	}
	append3 := func(stream string, evs []payment.Event) {
		var data []eventstore.EventData
		for _, e := range evs {
			typ, b, err := payment.Encode(e)
			require.NoError(t, err)
			data = append(data, eventstore.EventData{ID: uuid.New(), Type: typ, Data: b})
		}
		_, err := a.store.Append(ctx, stream, eventstore.NoStream, data)
		require.NoError(t, err)
	}
	append3("payment-stripe-pi_1", evs)
	a.exec(`
		INSERT INTO payments (provider, payment_id, stream_id, status, currency, authorized_amount,
			captured_amount, fee_amount, refunded_amount, version, updated_at)
		VALUES ('stripe', 'pi_1', 'payment-stripe-pi_1', 'partially_refunded', 'USD', 1000, 1000, 30, 200, 2, $1)`, qT0)

	type pay struct {
		Provider, Status string
		PaymentID        string `json:"payment_id"`
		Currency         *string
		Version          uint64
		Amounts          map[string]int64
		AmountsDecimal   map[string]string `json:"amounts_decimal"`
		Events           []struct {
			Version    uint64
			Type       string
			RecordedAt time.Time `json:"recorded_at"`
			Data       map[string]any
		}
	}
	var p pay
	a.getJSON("/v1/payments/stripe/pi_1", &p)
	assert.Equal(t, "partially_refunded", p.Status)
	assert.Equal(t, "USD", *p.Currency)
	assert.Equal(t, uint64(2), p.Version)
	assert.Equal(t, map[string]int64{
		"authorized": 1000, "captured": 1000, "refunded": 200, "disputed": 0,
		"fees": 30, "refund_pending": 0, "dispute_lost": 0, "failed_attempt": 0,
	}, p.Amounts)
	assert.Equal(t, "2.00", p.AmountsDecimal["refunded"])
	require.Len(t, p.Events, 3)
	for i, e := range p.Events {
		assert.Equal(t, uint64(i), e.Version)
		assert.Equal(t, evs[i].Type(), e.Type)
		assert.False(t, e.RecordedAt.IsZero())
		assert.NotEmpty(t, e.Data, "data is the stored JSON object")
	}

	header, rows, _ := a.getCSV("/v1/payments/stripe/pi_1")
	require.Len(t, rows, 1)
	rec := map[string]string{}
	for i, h := range header {
		rec[h] = rows[0][i]
	}
	assert.Equal(t, "partially_refunded", rec["status"])
	assert.Equal(t, "1000", rec["captured"])
	assert.Equal(t, "10.00", rec["captured_decimal"])
	assert.Equal(t, "0.30", rec["fees_decimal"])
	assert.Equal(t, "2", rec["version"])

	// Not in the read model yet (the projector lags): folded from the
	// events, with the same rules as the projection.
	meta2 := payment.Meta{Provider: "standard", PaymentKey: "pay_k", DedupKey: "w1", OccurredAt: qT0}
	append3("payment-standard-pay_k", []payment.Event{
		payment.Captured{Meta: meta2, CaptureID: "c1", Amount: 1500, Currency: "KWD"},
		payment.DisputeOpened{Meta: meta2, DisputeID: "d1", Amount: 500, Currency: "KWD"},
	})
	a.getJSON("/v1/payments/standard/pay_k", &p)
	assert.Equal(t, "disputed", p.Status)
	assert.Equal(t, "KWD", *p.Currency)
	assert.Equal(t, uint64(1), p.Version)
	assert.Equal(t, int64(500), p.Amounts["disputed"])
	assert.Equal(t, "1.500", p.AmountsDecimal["captured"])
	require.Len(t, p.Events, 2)

	// A fee only a settlement report knew (settlement.fee_posted, in the
	// payment's currency and in another): the ledger's entries are the
	// reference, the summary alone missed it (issue 27).
	meta3 := payment.Meta{Provider: "standard", PaymentKey: "pay_fee", DedupKey: "w3", OccurredAt: qT0}
	append3("payment-standard-pay_fee", []payment.Event{
		payment.Captured{Meta: meta3, CaptureID: "c3", Amount: 1000, Fee: 30, Currency: "USD"},
		payment.FeeSettled{Meta: meta3, LineID: "txn_3", Fee: 66, Currency: "USD"},
		payment.FeeSettled{Meta: meta3, LineID: "txn_4", Fee: 12, Currency: "EUR"},
	})
	var fp struct {
		Amounts        map[string]int64
		AmountsDecimal map[string]string `json:"amounts_decimal"`
		Fees           int64
		FeesByCurrency []struct {
			Currency      string
			Amount        int64
			AmountDecimal string `json:"amount_decimal"`
		} `json:"fees_by_currency"`
	}
	a.getJSON("/v1/payments/standard/pay_fee", &fp)
	assert.Equal(t, int64(96), fp.Amounts["fees"])
	assert.Equal(t, int64(96), fp.Fees)
	assert.Equal(t, "0.96", fp.AmountsDecimal["fees"])
	require.Len(t, fp.FeesByCurrency, 2)
	assert.Equal(t, "EUR", fp.FeesByCurrency[0].Currency)
	assert.Equal(t, "0.12", fp.FeesByCurrency[0].AmountDecimal)
	assert.Equal(t, int64(96), fp.FeesByCurrency[1].Amount)

	// Neither the read model nor the stream: 404.
	resp, body := a.do("/v1/payments/stripe/pi_nope", "Bearer "+qToken1)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, string(body), `"error"`)
	resp, _ = a.do("/v1/payments/nope/pi_1", "Bearer "+qToken1)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// A failed attempt of 9.00 keeps its amount and currency (issue 27):
// failed_attempt, beside the amounts, moves no money.
func TestQueryFailedPaymentKeepsItsAmount(t *testing.T) {
	a := newQAPI(t)
	metaF := payment.Meta{Provider: "standard", PaymentKey: "pay_fail", DedupKey: "w4", OccurredAt: qT0}
	typ, b, err := payment.Encode(payment.Failed{Meta: metaF, Reason: "card_declined", Amount: 900, Currency: "USD"})
	require.NoError(t, err)
	_, err = a.store.Append(context.Background(), "payment-standard-pay_fail", eventstore.NoStream,
		[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: b}})
	require.NoError(t, err)
	var p struct {
		Status         string
		Currency       *string
		Amounts        map[string]int64
		AmountsDecimal map[string]string `json:"amounts_decimal"`
	}
	a.getJSON("/v1/payments/standard/pay_fail", &p)
	assert.Equal(t, "failed", p.Status)
	require.NotNil(t, p.Currency)
	assert.Equal(t, "USD", *p.Currency)
	assert.Equal(t, int64(900), p.Amounts["failed_attempt"])
	assert.Equal(t, int64(0), p.Amounts["captured"])
	assert.Equal(t, "9.00", p.AmountsDecimal["failed_attempt"])
}

func TestQueryReconciliation(t *testing.T) {
	a := newQAPI(t)
	a.exec(`
		INSERT INTO reconciliation_items (stream_id, kind, item_key, status, provider, payment_id, details, opened_at, resolved_at)
		VALUES ('payment-stripe-pi_1', 'over_refund', 're_2', 'open', 'stripe', 'pi_1', 'refunds 1200 > captures 1000, "USD"', $1, NULL),
			('payment-stripe-pi_3', 'refund_before_payment', 're_9', 'resolved', 'stripe', 'pi_3', '', $2, $3)`,
		qT0.Add(time.Hour), qT0, qT0.Add(2*time.Hour))
	type item struct {
		StreamID   string `json:"stream_id"`
		Kind, Key  string
		Status     string
		Details    string
		OpenedAt   *time.Time `json:"opened_at"`
		ResolvedAt *time.Time `json:"resolved_at"`
	}
	var all struct{ Items []item }
	a.getJSON("/v1/reconciliation", &all)
	require.Len(t, all.Items, 2)
	assert.Equal(t, "re_9", all.Items[0].Key, "oldest first")
	assert.True(t, all.Items[0].ResolvedAt.Equal(qT0.Add(2*time.Hour)))
	assert.Nil(t, all.Items[1].ResolvedAt)

	var open struct{ Items []item }
	a.getJSON("/v1/reconciliation?status=open", &open)
	require.Len(t, open.Items, 1)
	assert.Equal(t, "over_refund", open.Items[0].Kind)
	a.getJSON("/v1/reconciliation?status=resolved&kind=over_refund", &open)
	assert.Empty(t, open.Items)
	require.NotNil(t, open.Items, "an empty list, not null")

	header, rows, _ := a.getCSV("/v1/reconciliation?kind=over_refund")
	assert.Equal(t, []string{"stream_id", "provider", "payment_id", "kind", "key", "status", "details", "opened_at", "resolved_at",
		"resolved_by", "note", "id"}, header)
	assert.Equal(t, [][]string{{
		"payment-stripe-pi_1", "stripe", "pi_1", "over_refund", "re_2", "open",
		`refunds 1200 > captures 1000, "USD"`, qT0.Add(time.Hour).Format(time.RFC3339Nano), "",
		"", "", "payment-stripe-pi_1/over_refund/re_2",
	}}, rows)
}

func TestQueryProjections(t *testing.T) {
	a := newQAPI(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		_, err := a.store.Append(ctx, "payment-test-x", eventstore.Any, []eventstore.EventData{{ID: uuid.New(), Type: "test.event", Data: []byte(`{}`)}})
		require.NoError(t, err)
	}
	// Visible to feed readers once no older transaction of the server runs.
	var feed []eventstore.RecordedEvent
	require.Eventually(t, func() bool {
		var err error
		feed, err = a.store.ReadAll(ctx, eventstore.Start, 10)
		require.NoError(t, err)
		return len(feed) == 3
	}, 30*time.Second, 20*time.Millisecond)
	a.exec(`UPDATE projection_checkpoints SET position_commit = $1, position_prepare = $2, status = 'live' WHERE name = 'ledger'`,
		int64(feed[0].Position.Commit), int64(feed[0].Position.Prepare))
	a.exec(`UPDATE projection_checkpoints SET last_error = 'unbalanced postings' WHERE name = 'payments'`)

	var raw struct {
		Projections []map[string]any `json:"projections"`
	}
	// Lags are counted below the feed horizon, which a transaction elsewhere
	// on the server can hold back for a moment: wait for the full counts.
	require.Eventually(t, func() bool {
		raw.Projections = nil
		a.getJSON("/v1/projections", &raw)
		return len(raw.Projections) == 4 && raw.Projections[0]["lag"] == float64(2) && raw.Projections[1]["lag"] == float64(3)
	}, 30*time.Second, 20*time.Millisecond, "lags never reached 2 and 3")
	require.Len(t, raw.Projections, 4) // ledger, payments, payouts, reconciliation
	ledger := raw.Projections[0]
	assert.Equal(t, "ledger", ledger["name"])
	assert.Equal(t, float64(feed[0].Position.Prepare), ledger["position"])
	assert.Equal(t, float64(2), ledger["lag"])
	assert.Equal(t, "live", ledger["status"])
	assert.NotContains(t, ledger, "error")
	assert.Equal(t, "payments", raw.Projections[1]["name"])
	assert.Equal(t, float64(0), raw.Projections[1]["position"])
	assert.Equal(t, float64(3), raw.Projections[1]["lag"])
	assert.Equal(t, "stopped", raw.Projections[1]["status"])
	assert.Equal(t, "unbalanced postings", raw.Projections[1]["error"])

	var header []string
	var rows [][]string
	require.Eventually(t, func() bool { // as above
		header, rows, _ = a.getCSV("/v1/projections")
		return len(rows) == 4 && len(rows[0]) > 3 && rows[0][3] == "2"
	}, 30*time.Second, 20*time.Millisecond, "ledger lag never reached 2")
	require.Equal(t, []string{"name", "position", "position_commit", "lag", "status", "error", "updated_at"}, header)
	require.Len(t, rows, 4)
	assert.Equal(t, []string{"ledger", strconv.FormatUint(feed[0].Position.Prepare, 10),
		strconv.FormatUint(feed[0].Position.Commit, 10), "2", "live", ""}, rows[0][:6])
}

func TestQueryAuth(t *testing.T) {
	pool := pgtest.NewPool(t)
	closed := startQAPI(t, pool, httpapi.Config{})
	open := startQAPI(t, pool, httpapi.Config{
		// Blank entries (a trailing comma in the variable) grant nothing.
		APITokens: []string{qToken1, "", " ", qToken2},
	})
	unauthorized := func(a *qapi, path, auth string) {
		t.Helper()
		resp, body := a.do(path, auth)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s with %q: %s", path, auth, body)
		assert.True(t, strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer"), resp.Header.Get("WWW-Authenticate"))
		var e struct{ Error string }
		require.NoError(t, json.Unmarshal(body, &e))
		assert.NotEmpty(t, e.Error)
	}
	paths := []string{"/v1/balances", "/v1/ledger/entries", "/v1/payments/stripe/pi_1", "/v1/reconciliation", "/v1/projections", "/v1/nope"}

	// No token configured: 401 for everyone, whatever they send.
	for _, p := range paths {
		for _, auth := range []string{"", "Bearer " + qToken1, "Bearer ", "Bearer"} {
			unauthorized(closed, p, auth)
		}
	}

	for _, p := range paths {
		for _, auth := range []string{
			"", "Bearer", "Bearer ", "Bearer wrong", "Bearer " + qToken1 + "x", "Bearer " + qToken1[:len(qToken1)-1],
			"Basic " + qToken1, qToken1, "Bearer " + strings.ToUpper(qToken1),
		} {
			unauthorized(open, p, auth)
		}
	}
	for _, auth := range []string{"Bearer " + qToken1, "Bearer " + qToken2, "bearer " + qToken2, "BEARER  " + qToken1} {
		resp, body := open.do("/v1/balances", auth)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%q: %s", auth, body)
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	}
	// Unknown /v1 paths are 404, and other methods on known ones 405, only
	// once authenticated.
	resp, _ := open.do("/v1/nope", "Bearer "+qToken2)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	for _, auth := range []string{"", "Bearer " + qToken1} {
		req, err := http.NewRequest(http.MethodPost, open.srv.URL+"/v1/balances", strings.NewReader("{}"))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := open.srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if auth == "" {
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		} else {
			assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
			assert.Equal(t, "GET", resp.Header.Get("Allow"))
		}
	}
	// A POST-only endpoint read with GET: 405 naming POST.
	resp, _ = open.do("/v1/periods/2026-11/close", "Bearer "+qToken1)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))

	// Health, readiness, metrics and the API document need no token, even
	// on a server with none configured.
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json"} {
		resp, body := closed.do(p, "")
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p, body)
	}
}

func TestQueryBadParameters(t *testing.T) {
	a := newQAPI(t)
	cases := []struct{ path, names string }{
		{"/v1/balances?currency=XXX", "currency"},
		{"/v1/balances?currency=US", "currency"},
		{"/v1/balances?as_of=yesterday", "as_of"},
		{"/v1/balances?as_of=2026-03-01", "as_of"},
		{"/v1/balances?format=xml", "format"},
		{"/v1/ledger/entries?currency=dollars", "currency"},
		{"/v1/ledger/entries?from=2026-13-01T00:00:00Z", "from"},
		{"/v1/ledger/entries?to=now", "to"},
		{"/v1/ledger/entries?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z", "to"},
		{"/v1/ledger/entries?limit=0", "limit"},
		{"/v1/ledger/entries?limit=1001", "limit"},
		{"/v1/ledger/entries?limit=ten", "limit"},
		{"/v1/ledger/entries?cursor=garbage!", "cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":1,"after":5,"x":1}`), "cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":2,"after":5}`), "cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":1,"after":-5}`), "cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":1,"after":"5"}`), "cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":1,"after":5} `), "cursor"},
		// A well-formed cursor of the old format (by row id, which a
		// rebuild renumbers) is refused, saying why.
		{"/v1/ledger/entries?cursor=" + b64(`{"v":1,"after":5}`), "old-format cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":2,"c":1,"p":2,"e":"not-a-uuid","i":0}`), "cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":2,"c":1,"p":2,"e":"0f8e4b7a-5c1d-4e2f-9a3b-6c7d8e9f0a1b","i":-1}`), "cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":2,"c":18446744073709551615,"p":2,"e":"0f8e4b7a-5c1d-4e2f-9a3b-6c7d8e9f0a1b","i":0}`), "cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":2,"c":1,"p":2,"e":"0F8E4B7A-5C1D-4E2F-9A3B-6C7D8E9F0A1B","i":0}`), "cursor"},
		{"/v1/ledger/entries?cursor=" + b64(`{"v":3,"c":1,"p":2,"e":"0f8e4b7a-5c1d-4e2f-9a3b-6c7d8e9f0a1b","i":0}`), "cursor"},
		{"/v1/reconciliation?status=closed", "status"},
		{"/v1/reconciliation?kind=refund_befor_payment", "kind"},
		{"/v1/projections?format=pdf", "format"},
		{"/v1/payments/stripe/pi_1?format=yaml", "format"},
	}
	for _, c := range cases {
		resp, body := a.do(c.path, "Bearer "+qToken1)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", c.path, body)
		var e struct{ Error string }
		require.NoError(t, json.Unmarshal(body, &e), "%s", body)
		assert.Contains(t, e.Error, c.names, c.path)
	}

	// A tampered cursor: one character of a real one changed.
	for i := 0; i < 60; i++ {
		a.entry("revenue:sales", "USD", -1, qT0)
	}
	var p qPage
	a.getJSON("/v1/ledger/entries?limit=2", &p)
	cur := *p.NextCursor
	resp, _ := a.do("/v1/ledger/entries?cursor="+url.QueryEscape(cur), "Bearer "+qToken1)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	for _, bad := range []string{cur[:len(cur)-1], cur + "A", cur + "="} {
		resp, _ := a.do("/v1/ledger/entries?cursor="+url.QueryEscape(bad), "Bearer "+qToken1)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, bad)
	}
	for i := range cur {
		for _, c := range []byte{'A', '_', '-', 'z', '='} {
			if cur[i] == c {
				continue
			}
			bad := cur[:i] + string(c) + cur[i+1:]
			resp, body := a.do("/v1/ledger/entries?cursor="+url.QueryEscape(bad), "Bearer "+qToken1)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", bad, body)
			assert.Contains(t, string(body), "cursor")
		}
	}

	// Unknown parameters are ignored.
	resp, _ = a.do("/v1/balances?colour=blue", "Bearer "+qToken1)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// b64 forges a cursor with a valid checksum around doc, to check that the
// document itself is validated too.
func b64(doc string) string {
	sum := sha256.Sum256([]byte(doc))
	return base64.RawURLEncoding.EncodeToString(append([]byte(doc), sum[:6]...))
}
