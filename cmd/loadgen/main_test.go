package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/scenario"
)

const (
	testStandardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	testStripeSecret   = "whsec_loadgen_test"
)

// fakeLedger is a minimal stand-in for the server, for the Standard
// provider only: it verifies signatures with the reference library, dedups
// by webhook-id (first payload wins), records each business id once, and
// posts per docs/reference.md. It lets the generator's own machinery (queue,
// retries, twins, baseline, comparison) be tested without the real server.
type fakeLedger struct {
	t        *testing.T
	verifier *standardwebhooks.Webhook

	mu       sync.Mutex
	seen     map[string]bool // webhook-id
	facts    map[string]bool // business ids applied
	opened   map[string]int64
	balances map[[2]string]int64
	inflight atomic.Int64
	peak     atomic.Int64

	// Fault injection.
	fail503       float64 // share of requests answered 503 before anything is stored
	applyConflict bool    // a buggy server: applies a changed payload as a new fact
	staleReads    int     // after the baseline, this many balance reads still show the baseline
	reads         int
	baseline      []byte
	requests      atomic.Int64
	rng           *rand.Rand
}

func newFake(t *testing.T) *fakeLedger {
	v, err := standardwebhooks.NewWebhook(testStandardSecret)
	require.NoError(t, err)
	return &fakeLedger{t: t, verifier: v, seen: map[string]bool{}, facts: map[string]bool{},
		opened: map[string]int64{}, balances: map[[2]string]int64{}, rng: rand.New(rand.NewPCG(1, 1))}
}

func (f *fakeLedger) post(account, cur string, amount int64) {
	f.balances[[2]string{account, cur}] += amount
}

func (f *fakeLedger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	switch r.URL.Path {
	case "/v1/projections":
		fmt.Fprint(w, `{"projections":[{"name":"ledger","position":7,"lag":0,"status":"live"}]}`)
	case "/v1/balances":
		f.serveBalances(w, r)
	case "/webhooks/standard":
		f.serveWebhook(w, r)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// serveBalances answers GET /v1/balances, staleReads times with the
// baseline after the first read.
func (f *fakeLedger) serveBalances(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer tok" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.reads > 1 && f.reads <= 1+f.staleReads {
		_, _ = w.Write(f.baseline) // a projector held back: the ledger settles later
		return
	}
	var out struct {
		Balances []map[string]any `json:"balances"`
	}
	for k, v := range f.balances {
		out.Balances = append(out.Balances, map[string]any{"account": k[0], "currency": k[1], "balance": v})
	}
	f.baseline, _ = json.Marshal(out)
	_, _ = w.Write(f.baseline)
}

// standardEvent is what the fake reads of a Standard Webhooks payload.
type standardEvent struct {
	Type string `json:"type"`
	Data struct {
		CaptureID string `json:"capture_id"`
		RefundID  string `json:"refund_id"`
		DisputeID string `json:"dispute_id"`
		PayoutID  string `json:"payout_id"`
		Amount    int64  `json:"amount"`
		Fee       int64  `json:"fee"`
		Currency  string `json:"currency"`
	} `json:"data"`
}

// serveWebhook verifies a delivery, dedups it by webhook-id (or fails it
// with 503, as configured) and applies it.
func (f *fakeLedger) serveWebhook(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	time.Sleep(time.Millisecond) // outside the lock: lets concurrent requests overlap
	if err := f.verifier.Verify(body, r.Header); err != nil {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":%q}`, err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng.Float64() < f.fail503 {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"try later"}`)
		return
	}
	id := r.Header.Get("webhook-id")
	if f.seen[id] && !f.applyConflict {
		fmt.Fprint(w, `{"status":"duplicate"}`)
		return
	}
	first := !f.seen[id]
	f.seen[id] = true
	var ev standardEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, `{"status":%q}`, f.apply(ev, first))
}

// apply posts ev's business fact once (every time, for a changed payload
// when applyConflict), and returns the answer's status. f.mu is held.
func (f *fakeLedger) apply(ev standardEvent, first bool) string {
	d, p := ev.Data, "standard"
	once := func(id string) bool {
		if f.applyConflict && !first {
			return true // the bug: a redelivery with a changed payload posts again
		}
		if f.facts[id] {
			return false
		}
		f.facts[id] = true
		return true
	}
	open := func() {
		if _, ok := f.opened[d.DisputeID]; !ok {
			f.opened[d.DisputeID] = d.Amount
			f.post("receivable:disputes:"+p, d.Currency, d.Amount)
			f.post("provider:"+p+":balance", d.Currency, -d.Amount)
		}
	}
	switch ev.Type {
	case "payment.captured":
		if once(d.CaptureID) {
			f.post("provider:"+p+":balance", d.Currency, d.Amount-d.Fee)
			f.post("expenses:fees:"+p, d.Currency, d.Fee)
			f.post("revenue:sales", d.Currency, -d.Amount)
		}
	case "refund.succeeded":
		if once(d.RefundID) {
			f.post("revenue:refunds", d.Currency, d.Amount)
			f.post("provider:"+p+":balance", d.Currency, -d.Amount)
		}
	case "dispute.opened":
		open()
	case "dispute.won", "dispute.lost":
		open()
		if once(d.DisputeID + "/outcome") {
			a := f.opened[d.DisputeID]
			if ev.Type == "dispute.won" {
				f.post("provider:"+p+":balance", d.Currency, a)
			} else {
				f.post("expenses:disputes", d.Currency, a)
			}
			f.post("receivable:disputes:"+p, d.Currency, -a)
		}
	case "payout.paid":
		if once(d.PayoutID) {
			f.post("bank:payouts", d.Currency, d.Amount)
			f.post("provider:"+p+":balance", d.Currency, -d.Amount)
		}
	case "payment.authorized", "payment.failed":
	default:
		return "ignored"
	}
	return "accepted"
}

func testOptions(url string) options {
	return options{URL: url, Token: "tok", Providers: "standard", StandardSecret: testStandardSecret,
		Payments: 400, Concurrency: 16, Duplicates: 0.3, Reorder: 0.5, Conflicts: 0.05, Wait: 5 * time.Second,
		Seed: 11, RunID: "tst", Baseline: true, MaxAttempts: 10, Backoff: time.Millisecond,
		MaxBackoff: 5 * time.Millisecond, Timeout: 5 * time.Second, LagInterval: 5 * time.Millisecond, JSON: true}
}

func runJSON(t *testing.T, o options) (summary, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), o, &out, &errOut)
	var s summary
	require.NoError(t, json.Unmarshal(out.Bytes(), &s), "summary is not JSON:\n%s\nstderr: %s", out.String(), errOut.String())
	return s, code, errOut.String()
}

func TestRunMatchesACorrectLedgerDespite503s(t *testing.T) {
	fake := newFake(t)
	fake.fail503 = 0.1
	fake.staleReads = 3
	// A pre-existing ledger: the baseline must take it out.
	fake.balances[[2]string{"revenue:sales", "USD"}] = -123456
	fake.balances[[2]string{"provider:standard:balance", "USD"}] = 123456
	srv := httptest.NewServer(fake)
	defer srv.Close()

	s, code, stderr := runJSON(t, testOptions(srv.URL))
	require.True(t, code == 0 && s.Verdict == "MATCH",
		"exit %d, verdict %s, differences %+v, violations %v\nstderr: %s", code, s.Verdict, s.Differences, s.AnswerViolations, stderr)
	assert.Equal(t, 4, s.BalanceReads, "%d balance reads; the ledger settled on the 4th", s.BalanceReads)
	require.True(t, s.Payments == 400 && s.Planned.Copies != 0 && s.Planned.Twins != 0 && s.Planned.Conflicts != 0 && s.Reordered != 0,
		"traffic not as configured: %+v", s)
	assert.Equal(t, int64(s.Planned.total()), s.Delivered, "delivered %d of %d planned", s.Delivered, s.Planned.total())
	o := s.Outcomes
	assert.True(t, o.Shed != 0 && o.Status5xx == 0 && o.Retries == o.Shed && o.Undelivered == 0, "503s with Retry-After are shed answers, each retried and once counted: %+v", o)
	assert.Equal(t, s.Delivered+o.Retries, s.Requests, "requests %d, delivered %d + retries %d", s.Requests, s.Delivered, o.Retries)
	assert.True(t, o.Accepted+o.Ignored == int64(s.Planned.First) && o.Duplicate == int64(s.Planned.Copies+s.Planned.Twins+s.Planned.Conflicts),
		"outcomes %+v for plan %+v", o, s.Planned)
	assert.True(t, s.ConflictsDuplicate == s.Planned.Conflicts && s.AnswersChecked == s.Planned.First,
		"answers: %d conflicts duplicate, %d keys checked; plan %+v", s.ConflictsDuplicate, s.AnswersChecked, s.Planned)
	assert.True(t, s.LatencyMs.P50 > 0 && s.LatencyMs.P99 >= s.LatencyMs.P50 && s.LatencyMs.Max >= s.LatencyMs.P99, "latency %+v", s.LatencyMs)
	p := fake.peak.Load()
	assert.GreaterOrEqual(t, p, int64(4), "peak concurrency %d with 16 senders", p)
}

func TestRunReportsEveryDifference(t *testing.T) {
	fake := newFake(t)
	fake.applyConflict = true // conflicting redeliveries post again
	srv := httptest.NewServer(fake)
	defer srv.Close()
	o := testOptions(srv.URL)
	o.Duplicates, o.Conflicts, o.Wait = 0, 0.2, 600*time.Millisecond
	s, code, _ := runJSON(t, o)
	require.True(t, code == 1 && strings.HasPrefix(s.Verdict, "MISMATCH (") && len(s.Differences) != 0,
		"exit %d, verdict %q, %d differences", code, s.Verdict, len(s.Differences))
	assert.Equal(t, fmt.Sprintf("MISMATCH (%d differences)", len(s.Differences)), s.Verdict, "verdict")
	// A conflict answered "accepted" is itself a broken answer.
	assert.NotEmpty(t, s.AnswerViolations, "conflicts answered accepted, no answer violation reported")
	for _, d := range s.Differences {
		assert.True(t, d.Expected != d.Actual && d.Account != "" && d.Currency != "", "bogus difference %+v", d)
	}
}

func TestRunAbsoluteModeSeesTheExistingLedger(t *testing.T) {
	fake := newFake(t)
	fake.balances[[2]string{"bank:payouts", "EUR"}] = 999
	srv := httptest.NewServer(fake)
	defer srv.Close()
	o := testOptions(srv.URL)
	o.Baseline, o.Payments, o.Wait = false, 20, 300*time.Millisecond
	s, code, _ := runJSON(t, o)
	found := false
	for _, d := range s.Differences {
		if d.Account == "bank:payouts" && d.Currency == "EUR" {
			found = d.Actual-d.Expected == 999
		}
	}
	assert.True(t, code == 1 && found, "exit %d, differences %+v", code, s.Differences)
}

func TestSenderGivesUpAfterMaxAttempts(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	s := &sender{base: srv.URL, client: srv.Client(), stripeSecret: testStripeSecret, maxAttempts: 4,
		backoff: time.Millisecond, maxBackoff: 2 * time.Millisecond, ans: newAnswers(), logf: func(string, ...any) {}}
	d := &scenario.Delivery{Provider: scenario.Stripe, ID: "evt_1", Type: "payout.paid", Body: []byte(`{}`)}
	require.False(t, s.deliver(context.Background(), d, d.Body, kindFirst), "a 500 counted as delivered")
	assert.Equal(t, int64(4), hits.Load(), "hits")
	assert.Equal(t, int64(3), s.c.Retries.Load(), "retries")
	assert.Equal(t, int64(4), s.c.Status5xx.Load(), "5xx")
	assert.Equal(t, int64(1), s.c.Undelivered.Load(), "undelivered")
}

// Every attempt is signed afresh and verifies with Stripe's SDK, retries
// included (a provider re-signs each attempt with a new timestamp).
func TestStripeAttemptsVerifyWithStripeSDK(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.ValidatePayload(body, r.Header.Get("Stripe-Signature"), testStripeSecret); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if n.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"status":"accepted"}`)
	}))
	defer srv.Close()
	s := &sender{base: srv.URL, client: srv.Client(), stripeSecret: testStripeSecret, maxAttempts: 5,
		backoff: time.Millisecond, maxBackoff: 2 * time.Millisecond, ans: newAnswers(), logf: t.Logf}
	d := &scenario.Delivery{Provider: scenario.Stripe, ID: "evt_1", Type: "payout.paid", Body: []byte(`{"id":"evt_1"}`)}
	require.True(t, s.deliver(context.Background(), d, d.Body, kindFirst), "not delivered")
	assert.Equal(t, int64(0), s.c.Status4xx.Load(), "4xx")
	assert.Equal(t, int64(2), s.c.Retries.Load(), "retries")
	assert.Equal(t, int64(1), s.c.Accepted.Load(), "accepted")
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	s := &sender{backoff: 100 * time.Millisecond, maxBackoff: 2 * time.Second}
	for attempt := 1; attempt <= 40; attempt++ {
		want := min(100*time.Millisecond<<min(attempt-1, 20), 2*time.Second)
		for range 50 {
			d := s.delay(attempt, 0)
			require.True(t, d >= want/2 && d <= want, "attempt %d: delay %v outside [%v, %v]", attempt, d, want/2, want)
		}
	}
	assert.Equal(t, time.Second, s.delay(1, time.Second), "Retry-After 1s")
	assert.Equal(t, 2*time.Second, s.delay(1, time.Hour), "Retry-After beyond the cap")
}

func TestQueueHandsOutEverythingOnceAndStops(t *testing.T) {
	gen, err := scenario.New(scenario.Config{Providers: []string{"stripe", "standard"}, RunID: "q", Seed: 3, Duplicates: 0.5, Conflicts: 0.1})
	require.NoError(t, err)
	q := newQueue(gen, 3, 8, 300, time.Time{})
	var mu sync.Mutex
	firsts := map[*scenario.Delivery]int{}
	var follow int
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, ok := q.Next()
				if !ok {
					return
				}
				mu.Lock()
				var fu []job
				if j.kind == kindFirst {
					firsts[j.d]++
					fu = followups(j.d)
				} else {
					follow++
				}
				mu.Unlock()
				q.Done(fu)
			}
		}()
	}
	wg.Wait()
	assert.True(t, q.payments == 300 && len(firsts) == q.planned.First,
		"payments %d, distinct firsts %d, planned %+v", q.payments, len(firsts), q.planned)
	for d, n := range firsts {
		assert.Equal(t, 1, n, "%s handed out %d times", d.ID, n)
	}
	assert.Equal(t, q.planned.Copies+q.planned.Conflicts, follow, "follow-ups %d, planned %+v", follow, q.planned)
	_, ok := q.Next()
	assert.False(t, ok, "work after the end")
}

func TestQueueStopFinishesStartedPayments(t *testing.T) {
	gen, _ := scenario.New(scenario.Config{Providers: []string{"standard"}, RunID: "s", Seed: 1})
	q := newQueue(gen, 1, 4, 0, time.Time{}) // no payment limit
	n := 0
	for range 10 {
		j, _ := q.Next()
		n++
		q.Done(followups(j.d))
	}
	q.Stop()
	started := q.payments
	for {
		j, ok := q.Next()
		if !ok {
			break
		}
		n++
		q.Done(followups(j.d))
	}
	assert.True(t, q.payments == started && n == q.planned.First,
		"after Stop: payments %d→%d, sent %d of %d planned", started, q.payments, n, q.planned.First)
}

func TestAnswersFlagDoubleFirstArrivals(t *testing.T) {
	a := newAnswers()
	a.answered("standard/m1", kindFirst, "accepted")
	a.answered("standard/m1", kindCopy, "duplicate")
	a.answered("standard/m2", kindFirst, "accepted")
	a.answered("standard/m2", kindCopy, "accepted") // the incident: two firsts
	a.answered("standard/m3", kindFirst, "duplicate")
	a.uncertain("standard/m3") // a lost answer earlier: exempt
	a.answered("standard/m4", kindFirst, "ignored")
	a.answered("standard/m4", kindConflict, "duplicate")
	a.answered("standard/m5", kindFirst, "accepted")
	a.answered("standard/m5", kindConflict, "accepted")
	checked, bad := a.violations()
	// m5 twice: two first arrivals, and a conflict not answered duplicate.
	assert.Equal(t, 4, checked, "checked")
	require.Len(t, bad, 3, "violations %v", bad)
	assert.Contains(t, bad[0], "m2", "violations %v", bad)
	assert.Contains(t, bad[1], "m5", "violations %v", bad)
	assert.Contains(t, bad[2], `m5 answered "accepted"`, "violations %v", bad)
}

func TestPacerSpacesDeliveries(t *testing.T) {
	p := newPacer(1000)
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				p.wait(context.Background(), 1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	assert.GreaterOrEqual(t, el, 190*time.Millisecond, "200 deliveries at 1000/s took %v", el)
	assert.Nil(t, newPacer(0), "rate 0 must not pace")
}

func TestFlags(t *testing.T) {
	t.Setenv("ONCELEDGER_ADDR", ":9999")
	t.Setenv("ONCELEDGER_API_TOKENS", " ,t1,t2")
	t.Setenv("ONCELEDGER_STRIPE_SECRETS", "whsec_a,whsec_b")
	t.Setenv("ONCELEDGER_STANDARD_SECRETS", testStandardSecret)
	o, err := parseFlags([]string{"--payments", "5", "--providers", "stripe"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.URL == "http://127.0.0.1:9999" && o.Token == "t1" && o.StripeSecret == "whsec_a" && o.Payments == 5 && o.Baseline && o.Seed != 0 && o.RunID != "",
		"options %+v", o)
	t.Setenv("ONCELEDGER_STRIPE_SECRETS", "")
	_, err = parseFlags([]string{"--providers", "stripe"}, io.Discard)
	assert.Error(t, err, "stripe without a secret accepted")
	_, err = parseFlags([]string{"--payments", "0"}, io.Discard)
	assert.Error(t, err, "--payments 0 without --duration accepted")
	assert.Equal(t, 1, o.Procs, "the generator keeps to one core by default")
	_, err = parseFlags([]string{"--procs", "-1"}, io.Discard)
	assert.ErrorContains(t, err, "--procs")
}

// Several instances behind no balancer: --url takes a comma-separated list
// and the attempts go round-robin over it; the instances share one ledger
// (here one fake), which the generator reads through the first.
func TestRunSpreadsAttemptsOverSeveralInstances(t *testing.T) {
	fake := newFake(t)
	var hits [3]atomic.Int64
	var urls []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				hits[i].Add(1)
			}
			fake.ServeHTTP(w, r)
		}))
		defer srv.Close()
		urls = append(urls, srv.URL+"/")
	}
	o, err := parseFlags([]string{"--url", strings.Join(urls, " , "), "--token", "tok", "--providers", "standard",
		"--standard-secret", testStandardSecret, "--payments", "100"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(urls[0], "/")+","+strings.TrimSuffix(urls[1], "/")+","+strings.TrimSuffix(urls[2], "/"), o.URL)
	opts := testOptions(o.URL)
	opts.Payments = 100
	s, code, stderr := runJSON(t, opts)
	require.True(t, code == 0 && s.Verdict == "MATCH", "exit %d, verdict %s, differences %+v\nstderr: %s", code, s.Verdict, s.Differences, stderr)
	total := hits[0].Load() + hits[1].Load() + hits[2].Load()
	assert.Equal(t, s.Requests, total, "every attempt reached one of the instances")
	for i := range hits {
		n := hits[i].Load()
		assert.InDelta(t, float64(total)/3, float64(n), 2, "instance %d got %d of %d attempts: round-robin", i, n, total)
	}

	_, err = parseFlags([]string{"--url", " , ", "--token", "tok", "--providers", "standard",
		"--standard-secret", testStandardSecret}, io.Discard)
	assert.Error(t, err, "an empty --url list accepted")
}
