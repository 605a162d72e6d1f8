package main_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// Tokens of the periods tests: an accountant who reads, an admin who acts.
const (
	readerToken = "reader-token-periods"
	adminToken  = "admin-token-periods"
)

// booksApp is the app as serve runs it (projectors included) on a real
// socket, over a fresh database, in a reporting zone, with a settable clock
// for the operators' actions.
type booksApp struct {
	t    *testing.T
	app  *app.App
	base string
	zone *time.Location
	now  atomic.Pointer[time.Time]
}

func startBooks(t *testing.T, kind eventStoreKind, zone *time.Location) *booksApp {
	t.Helper()
	sw, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	b := &booksApp{t: t, zone: zone}
	cfg := app.Config{
		DatabaseURL: pgtest.NewDatabase(t), Projections: true, ReportingZone: zone,
		Providers: map[string]providers.Adapter{"standard": sw},
		APITokens: []string{"accountant=" + readerToken}, AdminTokens: []string{"alice=" + adminToken},
		Logger: testLogger(), IngestTimeout: 5 * time.Second, ShutdownTimeout: 5 * time.Second,
		Now: func() time.Time {
			if p := b.now.Load(); p != nil {
				return *p
			}
			return time.Now()
		},
	}
	if kind == onESDB {
		cfg.EventStore = esdbfake.Start(t).URL()
	}
	b.app = newApp(t, cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.base = "http://" + l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.app.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return b
}

func (b *booksApp) setClock(at time.Time) { b.now.Store(&at) }

// do sends a request with a bearer token over the socket.
func (b *booksApp) do(method, path, token string, body []byte) answer {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, bytes.NewReader(body))
	require.NoError(b.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return answer{Status: resp.StatusCode, Body: string(got)}
}

func (b *booksApp) get(path string, v any) {
	b.t.Helper()
	a := b.do(http.MethodGet, path, readerToken, nil)
	require.Equal(b.t, http.StatusOK, a.Status, "GET %s: %s", path, a.Body)
	require.NoError(b.t, json.Unmarshal([]byte(a.Body), v), a.Body)
}

// deliver posts one signed Standard Webhooks delivery and requires 200.
func (b *booksApp) deliver(id, typ string, at time.Time, data string) {
	b.t.Helper()
	body := []byte(fmt.Sprintf(`{"type":%q,"timestamp":%q,"data":%s}`, typ, at.UTC().Format(time.RFC3339), data))
	req, err := http.NewRequest(http.MethodPost, b.base+"/webhooks/standard", bytes.NewReader(body))
	require.NoError(b.t, err)
	req.Header = standardDelivery(b.t, id, body, time.Now())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b.t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(b.t, http.StatusOK, resp.StatusCode, "delivery %s: %s", id, got)
}

type periodsAnswer struct {
	ReportingZone string `json:"reporting_zone"`
	Periods       []struct {
		Period      string `json:"period"`
		Status      string `json:"status"`
		Zone        string `json:"zone"`
		ClosedBy    string `json:"closed_by"`
		CloseNote   string `json:"close_note"`
		ContentHash string `json:"content_hash"`
		Entries     int64  `json:"entries"`
		Adjustments int64  `json:"adjustments"`
	} `json:"periods"`
}

type trialAnswer struct {
	Period      string `json:"period"`
	Status      string `json:"status"`
	Frozen      bool   `json:"frozen"`
	ContentHash string `json:"content_hash"`
	Lines       []struct {
		Account        string `json:"account"`
		Currency       string `json:"currency"`
		Opening        int64  `json:"opening"`
		Debits         int64  `json:"debits"`
		Credits        int64  `json:"credits"`
		Closing        int64  `json:"closing"`
		ClosingDecimal string `json:"closing_decimal"`
	} `json:"lines"`
	Adjustments []struct {
		Adjusts     string    `json:"adjusts_period"`
		Account     string    `json:"account"`
		Amount      int64     `json:"amount"`
		EventType   string    `json:"event_type"`
		EffectiveAt time.Time `json:"effective_at"`
	} `json:"adjustments"`
}

type journalAnswer struct {
	Journal []struct {
		ID             int64  `json:"id"`
		Date           string `json:"date"`
		Account        string `json:"account"`
		Debit          string `json:"debit"`
		Credit         string `json:"credit"`
		Currency       string `json:"currency"`
		Memo           string `json:"memo"`
		PaymentID      string `json:"payment_id"`
		EventID        string `json:"event_id"`
		Period         string `json:"period"`
		LateAdjustment bool   `json:"late_adjustment"`
		Adjusts        string `json:"adjusts_period"`
	} `json:"journal"`
	NextCursor string `json:"next_cursor"`
}

// waitPeriod polls GET /v1/periods until p satisfies ok (the projectors
// run in the background).
func (b *booksApp) waitPeriod(p string, ok func(status string, entries, adjustments int64) bool) {
	b.t.Helper()
	require.Eventually(b.t, func() bool {
		var list periodsAnswer
		b.get("/v1/periods", &list)
		for _, x := range list.Periods {
			if x.Period == p {
				return ok(x.Status, x.Entries, x.Adjustments)
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "period %s never got there", p)
}

// journalCSV downloads the journal as CSV and parses it.
func (b *booksApp) journalCSV(query string) [][]string {
	b.t.Helper()
	a := b.do(http.MethodGet, "/v1/journal?format=csv&"+query, readerToken, nil)
	require.Equal(b.t, http.StatusOK, a.Status, a.Body)
	recs, err := csv.NewReader(strings.NewReader(a.Body)).ReadAll()
	require.NoError(b.t, err, a.Body)
	require.NotEmpty(b.t, recs)
	require.Equal(b.t, views.JournalColumns, recs[0], "header row")
	return recs
}

// TestPeriodsEndToEnd is issue 15's story through docs/reference.md: an
// accountant closes November; a dispute for November arrives in December
// and is booked into December as a late adjustment; December's trial
// balance carries it as an adjustment to November, November's figures do
// not move; the journal exports; a rebuild books the same and verify
// passes.
func TestPeriodsEndToEnd(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) { periodsStory(t, kind) })
	}
}

func periodsStory(t *testing.T, kind eventStoreKind) {
	b := startBooks(t, kind, time.UTC)

	// November: a capture of 100.00 (fee 3.00). December: another.
	b.deliver("msg_cap_1", "payment.captured", b.at("2025-11-20T10:00:00Z"),
		`{"payment_id":"pay_1","capture_id":"cap_1","amount":10000,"currency":"USD","fee":300}`)
	b.deliver("msg_cap_2", "payment.captured", b.at("2025-12-03T10:00:00Z"),
		`{"payment_id":"pay_2","capture_id":"cap_2","amount":5000,"currency":"USD"}`)
	b.waitPeriod("2025-11", func(s string, n, _ int64) bool { return s == "open" && n == 3 })
	b.waitPeriod("2025-12", func(s string, n, _ int64) bool { return n == 2 })

	nov := b.closeNovember()
	beforeDispute := time.Now()
	b.lateDisputeIsADecemberAdjustment(nov)
	b.balancesByEffectiveAndBookedTime(beforeDispute)
	b.journalPagesAndCSVAgree()
	b.rebuildBooksTheSame(nov)
	b.reopenNovember()
}

// at parses an RFC 3339 time.
func (b *booksApp) at(s string) time.Time {
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(b.t, err)
	return v
}

// closeNovember closes November as the admin, after the refusals (a read
// token, bad periods, a period not ended yet, a reopen without a reason),
// and returns its frozen trial balance.
func (b *booksApp) closeNovember() trialAnswer {
	t := b.t
	// Closing acts on the ledger: a read token is refused, bad periods are
	// 400, a period not ended yet is 409.
	closeNov := []byte(`{"note":"November reconciled"}`)
	a := b.do(http.MethodPost, "/v1/periods/2025-11/close", readerToken, closeNov)
	assert.Equal(t, http.StatusForbidden, a.Status, a.Body)
	a = b.do(http.MethodPost, "/v1/periods/2025-13/close", adminToken, closeNov)
	assert.Equal(t, http.StatusBadRequest, a.Status, a.Body)
	a = b.do(http.MethodPost, "/v1/periods/2025-11/close", adminToken, []byte(`{"nope":1}`))
	assert.Equal(t, http.StatusBadRequest, a.Status, a.Body)
	a = b.do(http.MethodPost, "/v1/periods/2999-01/close", adminToken, nil)
	assert.Equal(t, http.StatusConflict, a.Status, a.Body)
	assert.Contains(t, a.Body, "has not ended")

	a = b.do(http.MethodPost, "/v1/periods/2025-11/close", adminToken, closeNov)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	var closed struct{ Period, Status, Zone, Actor, Note string }
	require.NoError(t, json.Unmarshal([]byte(a.Body), &closed))
	assert.Equal(t, "2025-11", closed.Period)
	assert.Equal(t, "alice", closed.Actor, "the actor is the admin token's name")
	assert.Equal(t, "November reconciled", closed.Note)
	assert.Equal(t, "UTC", closed.Zone)
	a = b.do(http.MethodPost, "/v1/periods/2025-11/close", adminToken, nil)
	assert.Equal(t, http.StatusConflict, a.Status, "closed already: %s", a.Body)
	a = b.do(http.MethodPost, "/v1/periods/2026-01/close", adminToken, nil)
	assert.Equal(t, http.StatusConflict, a.Status, "December is still open: %s", a.Body)
	a = b.do(http.MethodPost, "/v1/periods/2025-11/reopen", adminToken, []byte(`{}`))
	assert.Equal(t, http.StatusBadRequest, a.Status, "a reopen needs a reason: %s", a.Body)
	// October is closed too (before the start of the books), but only the
	// last closed period reopens: the answer says so.
	a = b.do(http.MethodPost, "/v1/periods/2025-10/reopen", adminToken, []byte(`{"reason":"x"}`))
	assert.Equal(t, http.StatusConflict, a.Status, a.Body)
	assert.Contains(t, a.Body, "only the last closed period can be reopened: 2025-10 is before the start of the books (2025-11) and stays closed; the last closed period is 2025-11")

	b.waitPeriod("2025-11", func(s string, _, _ int64) bool { return s == "closed" })
	var nov trialAnswer
	b.get("/v1/periods/2025-11/trial-balance", &nov)
	require.True(t, nov.Frozen)
	require.NotEmpty(t, nov.ContentHash)
	require.NotEmpty(t, nov.Lines)
	return nov
}

// lateDisputeIsADecemberAdjustment delivers a dispute that happened in
// November and arrives in December: December's trial balance carries it
// as an adjustment to November, whose figures (nov) do not move.
func (b *booksApp) lateDisputeIsADecemberAdjustment(nov trialAnswer) {
	t := b.t
	b.deliver("msg_dp_1", "dispute.opened", b.at("2025-11-28T09:00:00Z"),
		`{"payment_id":"pay_1","dispute_id":"dp_1","amount":2500,"currency":"USD"}`)
	b.waitPeriod("2025-12", func(_ string, n, adj int64) bool { return n == 4 && adj == 2 })

	var dec trialAnswer
	b.get("/v1/periods/2025-12/trial-balance", &dec)
	assert.Equal(t, "open", dec.Status)
	assert.False(t, dec.Frozen)
	require.Len(t, dec.Adjustments, 2, "the dispute's two postings")
	for _, adj := range dec.Adjustments {
		assert.Equal(t, "2025-11", adj.Adjusts)
		assert.Equal(t, "dispute.opened", adj.EventType)
		assert.True(t, adj.EffectiveAt.Equal(b.at("2025-11-28T09:00:00Z")), "the effective time is kept")
	}
	disputes := lineByAccount(dec, "receivable:disputes:standard")
	assert.EqualValues(t, 0, disputes.Opening)
	assert.EqualValues(t, 2500, disputes.Debits)
	assert.EqualValues(t, 2500, disputes.Closing)
	assert.Equal(t, "25.00", disputes.ClosingDecimal)
	balance := lineByAccount(dec, "provider:standard:balance")
	assert.EqualValues(t, 9700, balance.Opening, "December opens with November's closing")
	assert.EqualValues(t, 5000, balance.Debits)
	assert.EqualValues(t, 2500, balance.Credits)

	var novAfter trialAnswer
	b.get("/v1/periods/2025-11/trial-balance", &novAfter)
	assert.Equal(t, nov, novAfter, "November's figures never change")
}

// balancesByEffectiveAndBookedTime: time=effective (default) sees the
// dispute in November; time=booked as of before its delivery does not
// see it at all.
func (b *booksApp) balancesByEffectiveAndBookedTime(beforeDispute time.Time) {
	t := b.t
	var bal struct {
		Balances []struct {
			Account string `json:"account"`
			Balance int64  `json:"balance"`
		} `json:"balances"`
	}
	b.get("/v1/balances?account=receivable:&as_of=2025-11-30T23:59:59Z", &bal)
	require.Len(t, bal.Balances, 1)
	assert.EqualValues(t, 2500, bal.Balances[0].Balance)
	b.get("/v1/balances?account=receivable:&time=booked&as_of="+url.QueryEscape(beforeDispute.UTC().Format(time.RFC3339Nano)), &bal)
	assert.Empty(t, bal.Balances)
	a := b.do(http.MethodGet, "/v1/balances?time=later", readerToken, nil)
	assert.Equal(t, http.StatusBadRequest, a.Status, a.Body)
}

// journalPagesAndCSVAgree: the journal's CSV export balances and dates the
// late adjustment in December, and its JSON pages list the same rows.
func (b *booksApp) journalPagesAndCSVAgree() {
	t := b.t
	recs := b.journalCSV("from=2025-11-01&to=2026-01-01")
	rows := recs[1:]
	require.Len(t, rows, 7)
	col := func(name string) int {
		for i, c := range recs[0] {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	var debits, credits int64
	late := 0
	for _, r := range rows {
		debits += parseMinor(t, r[col("debit_minor")])
		credits += parseMinor(t, r[col("credit_minor")])
		if r[col("late_adjustment")] == "true" {
			late++
			assert.Equal(t, "2025-12-01", r[col("date")], "a late adjustment is dated in the period it is booked into")
			assert.Equal(t, "2025-12", r[col("period")])
			assert.Equal(t, "2025-11", r[col("adjusts_period")])
			assert.Contains(t, r[col("memo")], "late: adjusts 2025-11")
			assert.Equal(t, "pay_1", r[col("payment_id")])
		}
	}
	assert.Equal(t, 2, late)
	assert.Equal(t, debits, credits, "the journal balances")
	assert.Equal(t, "2025-11-20", rows[0][col("date")])

	var pages []string
	cursor := ""
	for {
		var j journalAnswer
		b.get("/v1/journal?from=2025-11-01&to=2026-01-01&limit=3&cursor="+cursor, &j)
		for _, r := range j.Journal {
			pages = append(pages, r.EventID+"|"+r.Account)
		}
		if j.NextCursor == "" {
			break
		}
		cursor = j.NextCursor
	}
	require.Len(t, pages, len(rows))
	for i, r := range rows {
		assert.Equal(t, r[col("event_id")]+"|"+r[col("account")], pages[i])
	}
}

// rebuildBooksTheSame rebuilds from history with the recorded close: the
// same bookings, journal, periods and trial balances (November's: nov),
// and verify passes.
func (b *booksApp) rebuildBooksTheSame(nov trialAnswer) {
	t := b.t
	csvBefore := b.journalCSV("")
	var periodsBefore periodsAnswer
	b.get("/v1/periods", &periodsBefore)
	var decBefore trialAnswer
	b.get("/v1/periods/2025-12/trial-balance", &decBefore)

	ctx := context.Background()
	rm, err := postgres.NewReadModelPool(ctx, b.app.Pool())
	require.NoError(t, err)
	defer rm.Close()
	svc := projections.NewService(b.app.Events().Store, readmodel.New(rm), testLogger(), projections.ReportingZone(b.zone))
	rep, err := svc.Rebuild(ctx, nil, projections.RebuildOptions{})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences, "rebuild books every entry as the live projection did")
	assert.True(t, rep.Swapped)
	// The journal carries no row id (a rebuild renumbers ledger_entries):
	// the export is the same, row for row.
	assert.Equal(t, csvBefore, b.journalCSV(""), "the same journal after the rebuild")
	var periodsAfter periodsAnswer
	b.get("/v1/periods", &periodsAfter)
	assert.Equal(t, periodsBefore, periodsAfter)
	var novRebuilt, decRebuilt trialAnswer
	b.get("/v1/periods/2025-11/trial-balance", &novRebuilt)
	b.get("/v1/periods/2025-12/trial-balance", &decRebuilt)
	assert.Equal(t, nov, novRebuilt)
	assert.Equal(t, decBefore, decRebuilt)

	violations, err := svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, violations)
}

// reopenNovember reopens the last closed period with a reason (November
// is open again and may be closed again; a second reopen is refused), and
// reads trial balances as CSV.
func (b *booksApp) reopenNovember() {
	t := b.t
	a := b.do(http.MethodPost, "/v1/periods/2025-11/reopen", adminToken, []byte(`{"reason":"late invoice found"}`))
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	b.waitPeriod("2025-11", func(s string, _, _ int64) bool { return s == "open" })
	a = b.do(http.MethodPost, "/v1/periods/2025-11/reopen", adminToken, []byte(`{"reason":"again"}`))
	assert.Equal(t, http.StatusConflict, a.Status, a.Body)

	a = b.do(http.MethodGet, "/v1/periods/2024-02/trial-balance", readerToken, nil)
	assert.Equal(t, http.StatusNotFound, a.Status, a.Body)
	a = b.do(http.MethodGet, "/v1/periods/2025-11/trial-balance?format=csv", readerToken, nil)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	assert.True(t, strings.HasPrefix(a.Body, strings.Join(views.TrialBalanceColumns, ",")+"\r\n"), a.Body)
	a = b.do(http.MethodGet, "/v1/periods/2025-12/trial-balance?format=csv&part=adjustments", readerToken, nil)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	assert.Equal(t, 3, strings.Count(a.Body, "\r\n"), "header and the two adjustments: %s", a.Body)
}

// TestPeriodsMonthBoundaryInReportingZone: in America/Los_Angeles,
// 2025-12-01T05:00Z is still November 30th. Entries land in the local
// month, November cannot close before local midnight, and a late fact at
// 23:59 local on the 30th is an adjustment to November.
func TestPeriodsMonthBoundaryInReportingZone(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	b := startBooks(t, onPostgres, la)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	b.deliver("msg_eve", "payment.captured", at("2025-12-01T05:00:00Z"), // Nov 30, 21:00 PST
		`{"payment_id":"pay_eve","capture_id":"cap_eve","amount":1000,"currency":"EUR"}`)
	b.deliver("msg_morning", "payment.captured", at("2025-12-01T09:00:00Z"), // Dec 1, 01:00 PST
		`{"payment_id":"pay_morning","capture_id":"cap_morning","amount":2000,"currency":"EUR"}`)
	b.waitPeriod("2025-11", func(_ string, n, _ int64) bool { return n == 2 })
	b.waitPeriod("2025-12", func(_ string, n, _ int64) bool { return n == 2 })

	var list periodsAnswer
	b.get("/v1/periods", &list)
	assert.Equal(t, "America/Los_Angeles", list.ReportingZone)

	// 07:59Z is 23:59 on November 30th in Los Angeles: not ended there,
	// although it is December in UTC.
	b.setClock(at("2025-12-01T07:59:00Z"))
	a := b.do(http.MethodPost, "/v1/periods/2025-11/close", adminToken, nil)
	assert.Equal(t, http.StatusConflict, a.Status, a.Body)
	assert.Contains(t, a.Body, "has not ended")
	b.setClock(at("2025-12-01T08:00:00Z"))
	a = b.do(http.MethodPost, "/v1/periods/2025-11/close", adminToken, nil)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	assert.Contains(t, a.Body, `"zone":"America/Los_Angeles"`)
	b.waitPeriod("2025-11", func(s string, _, _ int64) bool { return s == "closed" })

	// A refund at 23:59:59 local on November 30th, delivered later: an
	// adjustment to November, booked into December.
	b.deliver("msg_refund", "refund.succeeded", at("2025-12-01T07:59:59Z"),
		`{"payment_id":"pay_eve","refund_id":"re_eve","amount":400,"currency":"EUR"}`)
	b.waitPeriod("2025-12", func(_ string, n, adj int64) bool { return n == 4 && adj == 2 })

	recs := b.journalCSV("")
	dates := map[string]string{} // payment id and late flag -> date
	for _, r := range recs[1:] {
		dates[r[7]+"/"+r[14]] = r[0]
	}
	assert.Equal(t, map[string]string{
		"pay_eve/false":     "2025-11-30",
		"pay_morning/false": "2025-12-01",
		"pay_eve/true":      "2025-12-01",
	}, dates)

	// Date bounds are local midnights: December (local) holds the morning
	// capture, and the late refund by its effective time is in November.
	dec := b.journalCSV("from=2025-12-01&to=2026-01-01")
	require.Len(t, dec, 3)
	assert.Equal(t, "pay_morning", dec[1][7])
	decBooked := b.journalCSV("period=2025-12")
	assert.Len(t, decBooked, 5, "December's bookings: the morning capture and the late refund")

	var tb trialAnswer
	b.get("/v1/periods/2025-12/trial-balance", &tb)
	require.Len(t, tb.Adjustments, 2)
	assert.Equal(t, "2025-11", tb.Adjustments[0].Adjusts)
}

func lineByAccount(tb trialAnswer, account string) (line struct {
	Account        string `json:"account"`
	Currency       string `json:"currency"`
	Opening        int64  `json:"opening"`
	Debits         int64  `json:"debits"`
	Credits        int64  `json:"credits"`
	Closing        int64  `json:"closing"`
	ClosingDecimal string `json:"closing_decimal"`
}) {
	for _, l := range tb.Lines {
		if l.Account == account {
			return l
		}
	}
	return line
}

func parseMinor(t *testing.T, s string) int64 {
	t.Helper()
	if s == "" {
		return 0
	}
	var v int64
	_, err := fmt.Sscan(s, &v)
	require.NoError(t, err, s)
	return v
}

// TestPeriodCloseRace: many admins close the same month at once; exactly
// one close is recorded, the others are told it is closed already (or,
// when they kept losing the race for the stream, to retry).
func TestPeriodCloseRace(t *testing.T) {
	b := startBooks(t, onPostgres, time.UTC)
	const n = 16
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, b.base+"/v1/periods/2025-10/close", strings.NewReader(`{"note":"race"}`))
			if err != nil {
				statuses <- -1
				return
			}
			req.Header.Set("Authorization", "Bearer "+adminToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	assert.Equal(t, 1, count[http.StatusOK], "one close recorded: %v", count)
	assert.Equal(t, n-1, count[http.StatusConflict]+count[http.StatusServiceUnavailable], "the others refused: %v", count)

	recs, err := b.app.Events().Store.ReadStream(context.Background(), "periods")
	require.NoError(t, err)
	assert.Len(t, recs, 1)
	b.waitPeriod("2025-10", func(s string, _, _ int64) bool { return s == "closed" })
}
