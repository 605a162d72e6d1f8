package bookexport_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v82/webhook"

	"github.com/onceledger/onceledger/adapters/bookexport"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections"
)

const (
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	stripeSecret   = "whsec_test_secret_for_bookexport"
	readerToken    = "reader-token-export"
	adminToken     = "admin-token-export"
)

// books is the app as serve runs it (projectors included) on a real
// socket over a fresh database, with Standard Webhooks and Stripe
// configured, in a reporting zone, with a settable clock for the period
// close.
type books struct {
	t    *testing.T
	app  *app.App
	base string
	zone *time.Location
	now  atomic.Pointer[time.Time]
}

func startBooks(t *testing.T, esdb bool, zone *time.Location) *books {
	t.Helper()
	sw, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	st, err := stripe.New([]string{stripeSecret}, 5*time.Minute)
	require.NoError(t, err)
	b := &books{t: t, zone: zone}
	cfg := app.Config{
		DatabaseURL: pgtest.NewDatabase(t), Projections: true, ReportingZone: zone,
		Providers: map[string]providers.Adapter{"standard": sw, "stripe": st},
		APITokens: []string{"accountant=" + readerToken}, AdminTokens: []string{"alice=" + adminToken},
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		IngestTimeout: 5 * time.Second, ShutdownTimeout: 5 * time.Second,
		Now: func() time.Time {
			if p := b.now.Load(); p != nil {
				return *p
			}
			return time.Now()
		},
	}
	if esdb {
		cfg.EventStore = esdbfake.Start(t).URL()
	}
	a, err := app.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	b.app = a
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.base = "http://" + l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return b
}

func (b *books) do(method, path, token string, header http.Header, body []byte) (int, []byte) {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, bytes.NewReader(body))
	require.NoError(b.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, got
}

func (b *books) get(path string, v any) {
	b.t.Helper()
	status, body := b.do(http.MethodGet, path, readerToken, nil, nil)
	require.Equal(b.t, http.StatusOK, status, "GET %s: %s", path, body)
	require.NoError(b.t, json.Unmarshal(body, v), string(body))
}

var deliveries atomic.Int64

// standard posts one signed Standard Webhooks delivery.
func (b *books) standard(typ string, at time.Time, data string) {
	b.t.Helper()
	id := fmt.Sprintf("msg_%d", deliveries.Add(1))
	body := []byte(fmt.Sprintf(`{"type":%q,"timestamp":%q,"data":%s}`, typ, at.UTC().Format(time.RFC3339), data))
	wh, err := standardwebhooks.NewWebhook(standardSecret)
	require.NoError(b.t, err)
	now := time.Now()
	sig, err := wh.Sign(id, now, body)
	require.NoError(b.t, err)
	h := http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)},
		"Webhook-Signature": {sig}, "Content-Type": {"application/json"}}
	status, got := b.do(http.MethodPost, "/webhooks/standard", "", h, body)
	require.Equal(b.t, http.StatusOK, status, "%s: %s", typ, got)
}

// stripe posts one Stripe event signed with stripe-go's own test signer.
func (b *books) stripe(body string) {
	b.t.Helper()
	signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{
		Payload: []byte(body), Secret: stripeSecret, Timestamp: time.Now()})
	h := http.Header{"Stripe-Signature": {signed.Header}, "Content-Type": {"application/json"}}
	status, got := b.do(http.MethodPost, "/webhooks/stripe", "", h, []byte(body))
	require.Equal(b.t, http.StatusOK, status, "%s", got)
}

// caughtUp waits until every projection has read the head.
func (b *books) caughtUp() {
	b.t.Helper()
	require.Eventually(b.t, func() bool {
		var p struct {
			Projections []struct {
				Lag int64 `json:"lag"`
			} `json:"projections"`
		}
		b.get("/v1/projections", &p)
		for _, x := range p.Projections {
			if x.Lag != 0 {
				return false
			}
		}
		return len(p.Projections) > 0
	}, 60*time.Second, 50*time.Millisecond, "projections never caught up")
}

// export downloads one export over HTTP.
func (b *books) export(format, from, to string) []byte {
	b.t.Helper()
	status, body := b.do(http.MethodGet, "/v1/export/"+format+"?from="+from+"&to="+to, readerToken, nil, nil)
	require.Equal(b.t, http.StatusOK, status, "%s: %s", format, body)
	return body
}

// trialClosing is a period's trial balance: closing per account and
// currency.
func (b *books) trialClosing(p string) map[[2]string]int64 {
	var tb struct {
		Lines []struct {
			Account  string `json:"account"`
			Currency string `json:"currency"`
			Closing  int64  `json:"closing"`
		} `json:"lines"`
	}
	b.get("/v1/periods/"+p+"/trial-balance", &tb)
	out := map[[2]string]int64{}
	for _, l := range tb.Lines {
		if l.Closing != 0 {
			out[[2]string{l.Account, l.Currency}] = l.Closing
		}
	}
	return out
}

// balancesAsOf is /v1/balances?as_of=.
func (b *books) balancesAsOf(at time.Time) map[[2]string]int64 {
	var bal struct {
		Balances []struct {
			Account  string `json:"account"`
			Currency string `json:"currency"`
			Balance  int64  `json:"balance"`
		} `json:"balances"`
	}
	b.get("/v1/balances?as_of="+at.UTC().Format(time.RFC3339), &bal)
	out := map[[2]string]int64{}
	for _, l := range bal.Balances {
		if l.Balance != 0 {
			out[[2]string{l.Account, l.Currency}] = l.Balance
		}
	}
	return out
}

// named renames the accounts of figures as the default table names them
// in format f.
func named(t *testing.T, f bookexport.Format, figures map[[2]string]int64) map[[2]string]int64 {
	t.Helper()
	table := bookexport.DefaultTable()
	out := map[[2]string]int64{}
	for k, v := range figures {
		n, err := table.Name(f, k[0])
		require.NoError(t, err)
		out[[2]string{n, k[1]}] += v
	}
	return out
}

// toolBalances parses a tool's CSV balance report (account, currency,
// amount) into minor units, zero balances left out.
func toolBalances(t *testing.T, out string) map[[2]string]int64 {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err, out)
	got := map[[2]string]int64{}
	for _, r := range recs[1:] {
		acct, cur, num := strings.TrimSpace(r[0]), strings.TrimSpace(r[1]), strings.TrimSpace(r[2])
		num = strings.TrimSuffix(strings.TrimPrefix(num, "Decimal('"), "')")
		if acct == "" || acct == "total" {
			continue
		}
		v, err := money.ParseMajor(num, money.Currency(cur))
		require.NoError(t, err, "%v", r)
		if v != 0 {
			got[[2]string{acct, cur}] += v
		}
	}
	return got
}

// beanBalances is bean-query's balance of every account and currency.
func beanBalances(t *testing.T, file []byte) map[[2]string]int64 {
	tool(t, file, "bean-check", "FILE")
	return toolBalances(t, tool(t, file, "bean-query", "-f", "csv", "FILE",
		// str(): bean-query renders a number column at one precision
		// for all its rows (BHD's third decimal would be rounded away).
		"SELECT account, currency, str(sum(number)) AS n GROUP BY account, currency ORDER BY account, currency"))
}

// hledgerBalances is hledger bal's balance of every account and commodity.
func hledgerBalances(t *testing.T, file []byte) map[[2]string]int64 {
	tool(t, file, "hledger", "-f", "FILE", "check", "-s")
	return toolBalances(t, tool(t, file, "hledger", "-f", "FILE", "bal", "-O", "csv", "--layout=bare", "-N", "--flat"))
}

// TestExportsAgreeWithTheBooks is issue 38's story: a November of two
// providers in three currencies (signed webhooks, a Stripe payout report
// with a line no webhook delivered), closed; its four exports pass the
// accountants' tools (bean-check, hledger check -s) and their balances
// equal November's trial balance and /v1/balances?as_of=; a late capture
// for November arrives in December and a rebuild runs: November's exports
// are the same bytes, and December's (with the balances carried in, and
// the late capture dated 1 December naming its effective date) balance to
// December's trial balance. On both event stores.
func TestExportsAgreeWithTheBooks(t *testing.T) {
	for _, esdb := range []bool{false, true} {
		name := "postgres"
		if esdb {
			name = "esdb-fake"
		}
		t.Run(name, func(t *testing.T) { exportStory(t, esdb) })
	}
}

func exportStory(t *testing.T, esdb bool) {
	zone, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	s := &story{t: t, b: startBooks(t, esdb, zone), zone: zone}
	s.november()
	s.closeNovember()
	before := s.checkNovember()
	s.oneConnection(before)
	s.lateFactsAndRebuild()
	s.sameNovember(before)
	s.checkDecember()
	s.badRequests()
}

// story is the export story's books and what its steps share.
type story struct {
	t       *testing.T
	b       *books
	zone    *time.Location
	created time.Time // the Stripe charges'
	report  string    // the Stripe payout report
	nets    int64     // the Stripe payout
	state   func(asOf time.Time, amount int64)
	stateAs func(key string, asOf time.Time, amount int64)
}

func (s *story) at(day, hour int) time.Time { return time.Date(2026, 11, day, hour, 0, 0, 0, s.zone) }

func major(v int64) string { return fmt.Sprintf("%d.%02d", v/100, v%100) }

// november records the month through signed webhooks, a settlement
// report and stated balances.
func (s *story) november() {
	t, b, at := s.t, s.b, s.at
	// Standard: captures in USD (with fee), EUR and JPY, a refund, a
	// dispute lost, a payout.
	b.standard("payment.captured", at(2, 10), `{"payment_id":"pay_1","capture_id":"cap_1","amount":10000,"currency":"USD","fee":320}`)
	b.standard("payment.captured", at(3, 0), `{"payment_id":"pay_2","capture_id":"cap_2","amount":5000,"currency":"EUR","fee":100}`)
	b.standard("payment.captured", at(4, 23), `{"payment_id":"pay_3","capture_id":"cap_3","amount":120000,"currency":"JPY"}`)
	b.standard("refund.succeeded", at(10, 9), `{"payment_id":"pay_1","refund_id":"re_1","amount":2500,"currency":"USD"}`)
	b.standard("dispute.opened", at(12, 9), `{"payment_id":"pay_2","dispute_id":"dp_1","amount":5000,"currency":"EUR"}`)
	b.standard("dispute.lost", at(20, 9), `{"payment_id":"pay_2","dispute_id":"dp_1","amount":5000,"currency":"EUR"}`)
	b.standard("payout.paid", at(25, 9), `{"payout_id":"po_std_1","amount":7180,"currency":"USD"}`)

	// Stripe: three charges by webhook, a fourth only in the report; the
	// payout of all four, its fees told by the report.
	s.created = at(16, 11)
	created := s.created
	charges := []int64{2000, 3500, 1250, 990}
	s.report = "automatic_payout_id,balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,customer_facing_amount,customer_facing_currency,charge_id,payment_intent_id\n"
	for i, a := range charges {
		fee := 30 + a*29/1000
		s.nets += a - fee
		if i < 3 {
			b.stripe(fmt.Sprintf(`{"id":"evt_ch_%d","object":"event","type":"charge.succeeded","created":%d,"data":{"object":{"id":"ch_%d","object":"charge","payment_intent":"pi_%d","amount":%d,"amount_captured":%d,"captured":true,"currency":"usd"}}}`,
				i, created.Unix(), i, i, a, a))
		}
		ts := created.UTC().Format(time.DateTime)
		s.report += fmt.Sprintf("po_str_1,txn_%d,%s,%s,usd,%s,%s,%s,charge,ch_%d,%s,usd,ch_%d,pi_%d\n",
			i, ts, ts, major(a), major(fee), major(a-fee), i, major(a), i, i)
	}
	paid := at(19, 9)
	b.stripe(fmt.Sprintf(`{"id":"evt_po_1","object":"event","type":"payout.paid","created":%d,"data":{"object":{"id":"po_str_1","object":"payout","amount":%d,"arrival_date":%d,"automatic":true,"currency":"usd","status":"paid"}}}`,
		paid.Unix(), s.nets, paid.Unix()))
	status, got := b.do(http.MethodPost, "/v1/settlements/stripe", adminToken, http.Header{"Content-Type": {"text/csv"}}, []byte(s.report))
	require.Equal(t, http.StatusOK, status, "%s", got)
	// Stated balances of the Standard account (a dashboard): at the end
	// of 2 November (agrees: 96.80), within a day, and one that differs.
	balances := operations.NewBalances(b.app.Events().Store, b.app.Periods(), nil, nil)
	s.stateAs = func(key string, asOf time.Time, amount int64) {
		t.Helper()
		_, err := balances.State(context.Background(), assertion.Statement{Provider: "standard", Account: "provider:standard:balance",
			Currency: "USD", Source: "dashboard", Actor: "alice", Note: "checked",
			Points: []assertion.Point{{Key: key, AsOf: asOf, Amount: amount}}})
		require.NoError(t, err)
	}
	s.state = func(asOf time.Time, amount int64) { s.stateAs(asOf.UTC().Format(time.RFC3339), asOf, amount) }
	s.state(at(3, 0), 9680)
	s.state(at(3, 12), 9680)
	s.state(at(11, 0), 1)
	// The balance at the end of November, as the provider will state it
	// once the capture of 28 November (delivered late, in December) is
	// in: the ledger disagrees at the close, agrees after the late fact,
	// and November's export must not change with it.
	s.state(time.Date(2026, 12, 1, 0, 0, 0, 0, s.zone), 4100)
	b.caughtUp()

}

// closeNovember closes November, now.
func (s *story) closeNovember() {
	t, b := s.t, s.b
	// Close November, now (the close's time is compared with when the
	// report's lines arrived: a deposit journal of a closed period
	// itemises the lines known at its close).
	status, got := b.do(http.MethodPost, "/v1/periods/2026-11/close", adminToken, http.Header{"Content-Type": {"application/json"}}, []byte(`{"note":"November"}`))
	require.Equal(t, http.StatusOK, status, "%s", got)
	require.Eventually(t, func() bool {
		var p struct {
			Periods []struct{ Period, Status string } `json:"periods"`
		}
		b.get("/v1/periods", &p)
		for _, x := range p.Periods {
			if x.Period == "2026-11" {
				return x.Status == "closed"
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond)

}

// checkNovember checks the closed month's four exports with the tools
// and returns them.
func (s *story) checkNovember() map[string][]byte {
	t, b, zone := s.t, s.b, s.zone
	nov := b.trialClosing("2026-11")
	require.NotEmpty(t, nov)
	endNov := time.Date(2026, 12, 1, 0, 0, 0, 0, zone)
	assert.Equal(t, nov, b.balancesAsOf(endNov), "November has no late adjustment: the trial balance is the balance as of its end")
	before := map[string][]byte{}
	for _, f := range bookexport.Formats {
		before[string(f)] = b.export(string(f), "2026-11-01", "2026-12-01")
	}
	assert.Equal(t, named(t, bookexport.Beancount, nov), beanBalances(t, before["beancount"]), "bean-query balances = trial balance")
	assert.Equal(t, named(t, bookexport.Hledger, nov), hledgerBalances(t, before["hledger"]), "hledger bal = trial balance")
	assert.Contains(t, string(before["beancount"]), `payment-id: "pi_3"`, "the report-only charge, with its payment id")
	assert.Contains(t, string(before["beancount"]), `payout-id: "po_str_1"`)
	assert.Contains(t, string(before["beancount"]), "\n2026-11-03 balance Assets:Provider:Standard:Balance  96.80 ~ 0.00 USD\n")
	assert.Contains(t, string(before["beancount"]), "not at a day boundary")
	assert.Contains(t, string(before["beancount"]), "that differs from the balance at this export's dates: Assets:Provider:Standard:Balance 0.01 USD, here 71.80 USD")
	// The balance stated for the end of the range (as_of = to) is the
	// export's: the closing balance an accountant checks first.
	for _, f := range []string{"beancount", "hledger"} {
		assert.Contains(t, string(before[f]), "\n; 2026-12-01 balance assertion (standard, dashboard) that differs from the balance at this export's dates: Assets:Provider:Standard:Balance 41.00 USD, here 0.00 USD\n", f)
	}
	assert.Contains(t, string(before["hledger"]), "2026-11-02 * standard, dashboard | balance stated at the end of the day\n    Assets:Provider:Standard:Balance  0.00 USD = 96.80 USD\n")
	checkXero(t, before["xero"], named(t, bookexport.Xero, nov))
	// The Stripe payout is a deposit journal of its own: its amount on the
	// bank clearing account, against its four charges' gross and fees;
	// the Standard payout, without settlement lines, is not itemised.
	xero := string(before["xero"])
	deposit := "onceledger 2026-11-19 USD deposit 1: stripe payout po_str_1"
	assert.Contains(t, xero, fmt.Sprintf(`"%s","19/11/2026","deposit of stripe payout po_str_1","095","Tax Exempt",%s`, deposit, major(s.nets)))
	assert.Contains(t, xero, fmt.Sprintf(`"%s","19/11/2026","payout po_str_1: 4 charge lines, gross","1101","Tax Exempt",-%s`, deposit, major(2000+3500+1250+990)))
	assert.Contains(t, xero, fmt.Sprintf(`"%s","19/11/2026","payout po_str_1: fees of 4 charge lines","1101","Tax Exempt",%s`, deposit, major(2000+3500+1250+990-s.nets)))
	assert.NotContains(t, xero, "payout po_str_1: not itemised")
	assert.Contains(t, xero, `"onceledger 2026-11-25 USD deposit 1: standard payout po_std_1","25/11/2026","payout po_std_1: not itemised by its settlement lines","1102","Tax Exempt",-71.80`)
	assert.Contains(t, string(before["quickbooks"]), `"OL20261119USDD1","11/19/2026","Payouts in Transit","USD: deposit of stripe payout po_str_1",`)
	checkQuickBooks(t, before["quickbooks"], named(t, bookexport.QuickBooks, nov))

	return before
}

// oneConnection exports the closed month through a read model whose pool
// has a single connection: a deposit journal's payout lines must not need a
// second connection while the entries stream (N concurrent exports on a
// pool of N would each hold one and wait for another, for ever).
func (s *story) oneConnection(before map[string][]byte) {
	t := s.t
	cfg := s.b.app.Pool().Config()
	cfg.MaxConns, cfg.MinConns = 1, 0
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	x := app.NewExporter(readmodel.New(pool), nil, s.zone)
	for _, f := range []bookexport.Format{bookexport.Xero, bookexport.QuickBooks} {
		// A guard against the hang, not a timing: a deadlocked export
		// fails at the deadline instead of stalling the suite.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out bytes.Buffer
		err := x.Export(ctx, bookexport.Request{Format: f, From: time.Date(2026, 11, 1, 0, 0, 0, 0, s.zone),
			To: time.Date(2026, 12, 1, 0, 0, 0, 0, s.zone)}, &out)
		cancel()
		require.NoError(t, err, f)
		assert.Equal(t, string(before[string(f)]), out.String(), f)
	}
}

// lateFactsAndRebuild records December's facts, late ones for November
// among them, and rebuilds the projections.
func (s *story) lateFactsAndRebuild() {
	t, b, at, zone := s.t, s.b, s.at, s.zone
	// December: a late capture for November (booked into December) and
	// one of December; then a rebuild.
	b.standard("payment.captured", at(28, 22), `{"payment_id":"pay_late","capture_id":"cap_late","amount":4200,"currency":"USD","fee":100}`)
	b.standard("payment.captured", time.Date(2026, 12, 3, 10, 0, 0, 0, zone), `{"payment_id":"pay_dec","capture_id":"cap_dec","amount":777,"currency":"EUR"}`)
	// And a report line of November's payout no one had seen: its charge
	// is booked into December; November's deposit journal keeps the lines
	// known at its close.
	header, _, _ := strings.Cut(s.report, "\n")
	ts := s.created.UTC().Format(time.DateTime)
	late := fmt.Sprintf("%s\npo_str_1,txn_9,%s,%s,usd,5.00,0.45,4.55,charge,ch_9,5.00,usd,ch_9,pi_9\n", header, ts, ts)
	status, got := b.do(http.MethodPost, "/v1/settlements/stripe", adminToken, http.Header{"Content-Type": {"text/csv"}}, []byte(late))
	require.Equal(t, http.StatusOK, status, "%s", got)
	// A balance of November stated after its close: not in its export.
	s.state(at(20, 0), 7180)
	// The balance at the start of December (the end of November), stated
	// after November's close: not in November's export, but December's
	// starts there, and agrees (the late capture is dated 1 December).
	s.stateAs("start-of-december", time.Date(2026, 12, 1, 0, 0, 0, 0, zone), 0)
	b.caughtUp()
	ctx := context.Background()
	rm, err := postgres.NewReadModelPool(ctx, b.app.Pool())
	require.NoError(t, err)
	defer rm.Close()
	svc := projections.NewService(b.app.Events().Store, readmodel.New(rm), slog.New(slog.NewTextHandler(io.Discard, nil)), projections.ReportingZone(zone))
	rep, err := svc.Rebuild(ctx, nil, projections.RebuildOptions{})
	require.NoError(t, err)
	require.True(t, rep.Swapped)
	b.caughtUp()

}

// sameNovember: November's exports are the bytes they were.
func (s *story) sameNovember(before map[string][]byte) {
	t, b := s.t, s.b
	for _, f := range bookexport.Formats {
		assert.Equal(t, string(before[string(f)]), string(b.export(string(f), "2026-11-01", "2026-12-01")),
			"%s: a closed period's export is the same bytes after a late fact and a rebuild", f)
	}

}

// checkDecember checks the export of December, opening balances and late
// adjustments included, with the tools.
func (s *story) checkDecember() {
	t, b := s.t, s.b
	// December from its first day: the balances carried in, the late
	// capture dated 1 December with its effective date in the memo.
	dec := b.trialClosing("2026-12")
	bean := b.export("beancount", "2026-12-01", "2027-01-01")
	assert.Equal(t, named(t, bookexport.Beancount, dec), beanBalances(t, bean), "bean-query balances = December's trial balance")
	assert.Contains(t, string(bean), `2026-11-30 * "onceledger" "opening balance"`)
	assert.Contains(t, string(bean), "\n2026-12-01 balance Assets:Provider:Standard:Balance  0.00 ~ 0.00 USD\n",
		"an assertion at the start of an open period's export, stated after the previous period's close")
	assert.Contains(t, string(bean), `2026-12-01 * "standard" "payment.captured pay_late (late: effective 2026-11-28, adjusts 2026-11)"`)
	assert.Contains(t, string(bean), `2026-12-01 * "stripe" "payment.captured pi_9 (late: effective 2026-11-16, adjusts 2026-11)"`)
	assert.Equal(t, named(t, bookexport.Hledger, dec), hledgerBalances(t, b.export("hledger", "2026-12-01", "2027-01-01")))
	checkXero(t, b.export("xero", "2026-12-01", "2027-01-01"), named(t, bookexport.Xero, dec))
	checkQuickBooks(t, b.export("quickbooks", "2026-12-01", "2027-01-01"), named(t, bookexport.QuickBooks, dec))
	// From the beginning through December: the same figures.
	assert.Equal(t, named(t, bookexport.Beancount, dec), beanBalances(t, b.export("beancount", "2026-11-01", "2027-01-01")))

}

// badRequests: a bad format or range is 400 naming the parameter.
func (s *story) badRequests() {
	t, b := s.t, s.b
	// Bad requests name the parameter.
	for q, want := range map[string]string{
		"/v1/export/gnucash?from=2026-11-01&to=2026-12-01":   "format",
		"/v1/export/beancount?to=2026-12-01":                 "from",
		"/v1/export/beancount?from=2026-11-01":               "to",
		"/v1/export/beancount?from=2026-12-01&to=2026-11-01": "to",
		"/v1/export/xero?from=2026-13-01&to=2026-12-01":      "from",
	} {
		status, body := b.do(http.MethodGet, q, readerToken, nil, nil)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %s", q, body)
		assert.Contains(t, string(body), want, q)
	}
	status, _ := b.do(http.MethodGet, "/v1/export/beancount?from=2026-11-01&to=2026-12-01", "", nil, nil)
	assert.Equal(t, http.StatusUnauthorized, status)
}

// xeroJournal sums the lines of one Xero journal.
func checkXero(t *testing.T, file []byte, want map[[2]string]int64) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(file)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, bookexport.XeroColumns, recs[0])
	sums := map[string]int64{}
	lines := map[string]int{}
	got := map[[2]string]int64{}
	for _, r := range recs[1:] {
		narration := r[0]
		fields := strings.Fields(narration)
		require.GreaterOrEqual(t, len(fields), 5, narration)
		cur := money.Currency(fields[2])
		_, err := time.Parse("02/01/2006", r[1])
		require.NoError(t, err, r[1])
		assert.Equal(t, bookexport.XeroTaxRate, r[4])
		v, err := money.ParseMajor(r[5], cur)
		require.NoError(t, err)
		sums[narration+r[1]] += v
		lines[narration+r[1]]++
		got[[2]string{r[3], string(cur)}] += v
	}
	for j, s := range sums {
		assert.Zero(t, s, "Xero journal %s: debits = credits", j)
		assert.LessOrEqual(t, lines[j], bookexport.XeroMaxLines, j)
	}
	for k, v := range got {
		if v == 0 {
			delete(got, k)
		}
	}
	assert.Equal(t, want, got, "Xero journals sum to the trial balance")
}

func checkQuickBooks(t *testing.T, file []byte, want map[[2]string]int64) {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(file)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, bookexport.QuickBooksColumns, recs[0])
	debits, credits := map[string]int64{}, map[string]int64{}
	got := map[[2]string]int64{}
	for _, r := range recs[1:] {
		cur := money.Currency(r[0][10:13]) // OL, the date, the currency
		_, err := time.Parse("01/02/2006", r[1])
		require.NoError(t, err, r[1])
		require.True(t, strings.HasPrefix(r[3], string(cur)+": "), r[3])
		require.True(t, (r[4] == "") != (r[5] == ""), "one side: %v", r)
		if r[4] != "" {
			v, err := money.ParseMajor(r[4], cur)
			require.NoError(t, err)
			debits[r[0]] += v
			got[[2]string{r[2], string(cur)}] += v
		} else {
			v, err := money.ParseMajor(r[5], cur)
			require.NoError(t, err)
			credits[r[0]] += v
			got[[2]string{r[2], string(cur)}] -= v
		}
	}
	// Every journal, a journal of credits alone included.
	for _, side := range []map[string]int64{debits, credits} {
		for j := range side {
			assert.Equal(t, debits[j], credits[j], "QuickBooks journal %s: debits = credits", j)
		}
	}
	for k, v := range got {
		if v == 0 {
			delete(got, k)
		}
	}
	assert.Equal(t, want, got, "QuickBooks journals sum to the trial balance")
}
