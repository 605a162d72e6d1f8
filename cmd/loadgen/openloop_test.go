package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/scenario"
)

// In open loop a delivery's latency counts from its scheduled slot: a send
// that left late (every sender busy) carries the time it waited. Closed loop
// measures from the send itself.
func TestOpenLoopLatencyCountsFromTheSchedule(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"accepted"}`))
	}))
	defer srv.Close()
	d := &scenario.Delivery{Provider: scenario.Stripe, ID: "evt_1", Type: "payout.paid", Body: []byte(`{}`)}
	slot := time.Now().Add(-300 * time.Millisecond) // the slot passed while no sender was free

	for _, openLoop := range []bool{true, false} {
		s := &sender{base: srv.URL, client: srv.Client(), stripeSecret: testStripeSecret, maxAttempts: 1,
			ans: newAnswers(), openLoop: openLoop, logf: func(string, ...any) {}}
		req, err := s.request(context.Background(), d, d.Body, slot)
		require.True(t, s.deliverAt(context.Background(), d, d.Body, kindFirst, slot, req, err))
		lat, late := s.latency.Summary(), s.late.Summary()
		require.Equal(t, 1, lat.Count)
		if openLoop {
			assert.GreaterOrEqual(t, lat.Max, 300*time.Millisecond, "open loop: latency from the slot")
			assert.Equal(t, 1, s.late.CountAbove(lateThreshold), "the late send is reported")
			assert.GreaterOrEqual(t, late.Max, 300*time.Millisecond)
		} else {
			assert.Less(t, lat.Max, 300*time.Millisecond, "closed loop: latency from the send")
			assert.Zero(t, late.Count)
		}
	}
}

// The pacer hands out fixed slots whatever the answers: a sender that takes
// a slot already due leaves at once, and the schedule never stretches.
func TestPacerSlotsAreFixed(t *testing.T) {
	p := newPacer(1000) // one slot a millisecond
	first := p.wait(context.Background(), 1)
	time.Sleep(20 * time.Millisecond) // a slow answer: slots 1..19 are past now
	second := p.wait(context.Background(), 2)
	third := p.wait(context.Background(), 1)
	assert.Equal(t, time.Millisecond, second.Sub(first))
	assert.Equal(t, 2*time.Millisecond, third.Sub(second), "a twin takes two slots")
	assert.True(t, (*pacer)(nil).wait(context.Background(), 1).IsZero(), "unpaced: no schedule")
}

func TestOpenLoopNeedsARateAndEnoughSenders(t *testing.T) {
	t.Setenv("ONCELEDGER_API_TOKENS", "tok")
	t.Setenv("ONCELEDGER_STANDARD_SECRETS", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	t.Setenv("ONCELEDGER_STRIPE_SECRETS", "whsec_x")
	_, err := parseFlags([]string{"--open-loop"}, nil)
	require.ErrorContains(t, err, "--open-loop needs a --rate")
	o, err := parseFlags([]string{"--open-loop", "--rate", "500", "--concurrency", "8"}, nil)
	require.NoError(t, err)
	assert.Equal(t, defaultOpenLoopConns, o.MaxConns, "open loop: a bounded pool of connections by default")
	assert.Equal(t, defaultOpenLoopConns, o.Concurrency, "a sender per connection")
	assert.Equal(t, 4*500, o.Window, "four seconds of the offered rate in flight, as before the pool")
	o, err = parseFlags([]string{"--open-loop", "--rate", "20000", "--max-conns", "100"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 100, o.Concurrency, "not one sender per delivery a second: the rate does not raise the pool")
	_, err = parseFlags([]string{"--open-loop", "--rate", "5", "--max-conns", "-1"}, nil)
	require.ErrorContains(t, err, "--max-conns")
}

// A run with a --duration ends hard at --duration + --grace even when the
// server never answers (session 8's run at 100 % never ended): what is
// unanswered then is counted as failed, not waited for, and the generator
// never holds more connections than --max-conns. The server is real (a
// socket that reads each request and never answers it).
func TestOpenLoopRunEndsHardAgainstAServerThatNeverAnswers(t *testing.T) {
	var open, peak atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/projections":
			_, _ = w.Write([]byte(`{"projections":[{"name":"ledger","position":1,"lag":0,"status":"live"}]}`))
		case "/v1/balances":
			_, _ = w.Write([]byte(`{"data":[],"next_cursor":null}`))
		default:
			_, _ = io.ReadAll(r.Body)
			<-r.Context().Done() // never answers: the client must give up
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			n := open.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()

	o := testOptions(srv.URL)
	o.Payments, o.Duration, o.Rate, o.OpenLoop = 0, 300*time.Millisecond, 100, true
	o.MaxConns, o.Concurrency, o.Grace = 4, 4, 400*time.Millisecond
	o.Timeout = time.Minute // the hard end, not the request timeout, must end it
	start := time.Now()
	s, code, stderr := runJSON(t, o)
	took := time.Since(start)
	assert.Less(t, took, 5*time.Second, "the run must end at its hard end (0.7 s), took %v", took)
	assert.Equal(t, 1, code, "a cut run fails\nstderr: %s", stderr)
	assert.True(t, s.Cut, "verdict %q", s.Verdict)
	assert.Zero(t, s.Delivered)
	assert.Positive(t, s.Outcomes.Unanswered, "unanswered deliveries count as failures: %+v", s.Outcomes)
	assert.Positive(t, s.NotSent, "the deliveries whose turn never came are reported")
	assert.LessOrEqual(t, peak.Load(), int64(4+1), "at most --max-conns connections to webhooks (+1: the /v1 reads' pool is the same client)")
	assert.Contains(t, s.Verdict, "CUT")
}

// In open loop a shed delivery's retry waits off the sender: the senders
// keep the schedule (a provider retries beside its new events). Every
// first attempt here is shed with Retry-After: 1; two senders at 20/s
// that slept through each retry's second would send 2 a second, late by
// seconds, and not finish before the hard end. (At the end of a run the
// senders idle while the follow-ups wait for their first deliveries'
// retries, and the schedule does not stretch: those slots are late.)
func TestOpenLoopRetriesDoNotHoldTheSenders(t *testing.T) {
	fake := newFake(t)
	var mu sync.Mutex
	shed := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("webhook-id"); id != "" {
			mu.Lock()
			first := !shed[id]
			shed[id] = true
			mu.Unlock()
			if first {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	o := testOptions(srv.URL)
	o.Payments, o.Duration, o.Rate, o.OpenLoop, o.Window = 0, time.Second, 20, true, 4
	// Two senders, connections to spare: what is measured is the senders.
	o.MaxConns, o.Concurrency, o.Grace, o.MaxBackoff = 16, 2, 8*time.Second, 2*time.Second
	s, code, stderr := runJSON(t, o)
	require.True(t, code == 0 && s.Verdict == "MATCH", "exit %d, verdict %s\nstderr: %s", code, s.Verdict, stderr)
	assert.Equal(t, int64(s.Planned.total()), s.Delivered)
	assert.Positive(t, s.Outcomes.Shed)
	// About 30 deliveries, each shed once for a second: two senders
	// sleeping through each second would take 15 s (and be cut at 9 s).
	assert.Less(t, s.SendSeconds, 6.0, "the retries waited off the senders")
	assert.Less(t, s.LateMs.P50, 100.0, "the senders kept their slots: %+v", s.LateMs)
}

// Shed answers (429 or 503 with Retry-After: admission's) are counted apart
// from the server's failures (a 503 without Retry-After, a 500).
func TestShedAnswersAreCountedApartFrom5xx(t *testing.T) {
	cases := []struct {
		status     int
		retryAfter string
		shed, s5xx int64
	}{
		{http.StatusServiceUnavailable, "1", 1, 0},
		{http.StatusTooManyRequests, "0", 1, 0},
		{http.StatusServiceUnavailable, "", 0, 1},
		{http.StatusInternalServerError, "1", 0, 1},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if c.retryAfter != "" {
				w.Header().Set("Retry-After", c.retryAfter)
			}
			w.WriteHeader(c.status)
		}))
		s := &sender{base: srv.URL, client: srv.Client(), stripeSecret: testStripeSecret, maxAttempts: 1,
			ans: newAnswers(), logf: func(string, ...any) {}}
		d := &scenario.Delivery{Provider: scenario.Stripe, ID: "evt_s", Type: "payout.paid", Body: []byte(`{}`)}
		assert.False(t, s.deliver(context.Background(), d, d.Body, kindFirst))
		assert.Equal(t, c.shed, s.c.Shed.Load(), "%d Retry-After %q: shed", c.status, c.retryAfter)
		assert.Equal(t, c.s5xx, s.c.Status5xx.Load(), "%d Retry-After %q: 5xx", c.status, c.retryAfter)
		srv.Close()
	}
}

// A generator that falls behind its own schedule (its slots are past when
// the senders get to them: no CPU for it, or every sender busy) still
// counts each delivery's latency from its slot, through the whole sender
// path: the request built and signed ahead, the sleep, the send.
func TestOpenLoopGeneratorBehindItsScheduleCountsFromTheSlot(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"accepted"}`))
	}))
	defer srv.Close()
	p := newPacer(1000)
	p.start = time.Now().Add(-time.Second) // slots 0..999 passed already
	s := &sender{base: srv.URL, client: srv.Client(), stripeSecret: testStripeSecret, maxAttempts: 1,
		ans: newAnswers(), pace: p, openLoop: true, logf: func(string, ...any) {}}
	d := &scenario.Delivery{Provider: scenario.Stripe, ID: "evt_2", Type: "payout.paid", Body: []byte(`{}`), Twin: true}
	_, later := s.run(context.Background(), job{d: d, kind: kindFirst})
	require.NotNil(t, later, "open loop: a twin pair runs off the sender")
	later()
	lat, late := s.latency.Summary(), s.late.Summary()
	require.Equal(t, 2, lat.Count, "the delivery and its twin")
	assert.GreaterOrEqual(t, lat.P50, time.Second, "latency from the slot, not from the send")
	assert.Equal(t, 2, s.late.CountAbove(lateThreshold))
	assert.GreaterOrEqual(t, late.P50, time.Second)
}

// A send on time is recorded as 0 behind its slot, and only sends more than
// lateThreshold behind count as late: the count means the generator failed
// its schedule, not that a timer woke a few microseconds after it.
func TestOnTimeSendsAreNotLate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"accepted"}`))
	}))
	defer srv.Close()
	s := &sender{base: srv.URL, client: srv.Client(), stripeSecret: testStripeSecret, maxAttempts: 1,
		ans: newAnswers(), openLoop: true, logf: func(string, ...any) {}}
	d := &scenario.Delivery{Provider: scenario.Stripe, ID: "evt_3", Type: "payout.paid", Body: []byte(`{}`)}
	slot := time.Now().Add(time.Hour) // not due: the send leaves "before" its slot
	req, err := s.request(context.Background(), d, d.Body, signTime(slot))
	require.NoError(t, err)
	require.True(t, s.deliverAt(context.Background(), d, d.Body, kindFirst, slot, req, nil))
	assert.Equal(t, 1, s.late.Summary().Count, "every open-loop send is in the distribution")
	assert.Zero(t, s.late.Summary().Max, "ahead of the slot counts as on time")
	assert.Zero(t, s.late.CountAbove(lateThreshold))
}

// A request built ahead of its slot is signed for the slot; one whose slot
// passed, or that has none, for now.
func TestSignTime(t *testing.T) {
	future := time.Now().Add(time.Minute)
	assert.Equal(t, future, signTime(future))
	past := time.Now().Add(-time.Minute)
	assert.WithinDuration(t, time.Now(), signTime(past), time.Minute/2)
	assert.WithinDuration(t, time.Now(), signTime(time.Time{}), time.Minute/2)
}

// Prime activates the first window before the clock starts; Next then
// hands out the same deliveries as it would have.
func TestQueuePrimeFillsTheWindow(t *testing.T) {
	gen, err := scenario.New(scenario.Config{Providers: []string{scenario.Stripe, scenario.Standard}, Duplicates: 0.2, RunID: "p", Seed: 7})
	require.NoError(t, err)
	q := newQueue(gen, 7, 16, 0, time.Time{})
	q.Prime()
	assert.Len(t, q.active, 16)
	assert.Equal(t, 16, q.payments+q.payouts)
	_, ok := q.Next()
	assert.True(t, ok)
}
