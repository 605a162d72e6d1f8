package expectations

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Outcome is what one question to a provider came to (the metric's label).
type Outcome string

const (
	OutcomePaid        Outcome = "paid"         // paid: its fact was recorded through the gate
	OutcomePending     Outcome = "pending"      // not paid yet (WAIT_BUYER_PAY, NOTPAY, USERPAYING, processing): ask again
	OutcomeNotExist    Outcome = "not_exist"    // the provider knows no such payment yet: ask again
	OutcomeClosed      Outcome = "closed"       // closed, failed or canceled unpaid: nothing to record, stop asking
	OutcomeForged      Outcome = "forged"       // the answer did not verify: nothing recorded, ask again later
	OutcomeRateLimited Outcome = "rate_limited" // 429 (Retry-After honoured): ask again after it
	OutcomeError       Outcome = "error"        // an error or a time-out: back off; never a fact
)

// Answer is a verified answer.
type Answer struct {
	Outcome Outcome
	// Event is the fact the payment's webhook carries (same business ids,
	// same facts hash), when Outcome is OutcomePaid.
	Event delivery.Event
}

// ErrForged is wrapped by an asker whose answer is unsigned, wrongly
// signed or signed by a key it does not know: nothing in it is believed.
var ErrForged = errors.New("the provider's answer does not verify")

// RetryAfterError is a provider's "too many requests": ask nothing of it
// for After (its Retry-After; 0 when it named none).
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("rate limited for %s: %v", e.After, e.Err)
}
func (e *RetryAfterError) Unwrap() error { return e.Err }

// Asker asks one provider's API about the payment of one reference.
type Asker interface {
	Ask(ctx context.Context, reference string) (Answer, error)
}

// Gate records a fact as its webhook would be: the ingest service
// (adapters/ingest.Service.Ingest), the one write protocol.
type Gate interface {
	Ingest(ctx context.Context, ev delivery.Event) (ingest.Result, error)
}

// Due is one expectation (or, Pending, one payment a webhook said is
// pending and no expectation names) whose provider is to be asked now.
type Due struct {
	ID                  uuid.UUID
	Pending             bool
	Provider, Reference string
	Attempts            int
}

// Schedule is the durable schedule of asking (expected_payments'
// next_query_at, query_attempts and lease).
type Schedule interface {
	// Claim leases, for lease, up to limit expectations of these providers
	// whose next_query_at is at or before now and that no live lease
	// holds.
	Claim(ctx context.Context, owner string, providers []string, now time.Time, lease time.Duration, limit int) ([]Due, error)
	// Reschedule sets when to ask next (zero: never again), the attempts
	// so far, and releases owner's lease. A terminal expectation is never
	// rescheduled.
	Reschedule(ctx context.Context, d Due, owner string, next time.Time, attempts int) error
	// ScanPending schedules, queryAfter after they were seen, the payments
	// webhooks said are pending (Alipay WAIT_BUYER_PAY, Stripe processing)
	// that no expectation names; it returns how many it added.
	ScanPending(ctx context.Context, queryAfter time.Duration) (int, error)
}

// QueryConfig tunes the asking.
type QueryConfig struct {
	Owner string
	// Rate is each provider's limit of questions per second (default 5).
	Rate float64
	// Backoff is the wait after the first unanswered question, doubled
	// each time up to MaxBackoff (defaults 1m, 1h).
	Backoff, MaxBackoff time.Duration
	Lease               time.Duration // default 1m
	Timeout             time.Duration // one question's time-out; default 20s
	// Concurrency is how many questions to one provider may be in flight
	// at once (default 1): the rate limiter still spaces their starts, so
	// it only matters when one question (its answer recorded through the
	// gate, the schedule updated) takes longer than 1/Rate. Questions in
	// flight when a 429 arrives are not recalled; the next ones wait for
	// its Retry-After.
	Concurrency int
	Batch       int           // default 100
	Poll        time.Duration // default 5s
	// PendingAfter: payments a webhook said are pending are asked about
	// this long after (ONCELEDGER_QUERY_AFTER); 0: not asked.
	PendingAfter time.Duration
	Now          func() time.Time
	Logger       *slog.Logger
	// Registerer takes the metric onceledger_provider_queries_total
	// {provider,outcome}; nil: not exported.
	Registerer prometheus.Registerer
}

// Querier asks the providers about due expectations.
type Querier struct {
	askers  map[string]Asker
	gate    Gate
	sched   Schedule
	cfg     QueryConfig
	limits  map[string]*limiter
	counter *prometheus.CounterVec
}

// NewQuerier returns the asker of askers (by provider name).
func NewQuerier(askers map[string]Asker, gate Gate, sched Schedule, cfg QueryConfig) *Querier {
	if cfg.Rate <= 0 {
		cfg.Rate = 5
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Minute
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Hour
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 20 * time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Owner == "" {
		cfg.Owner = "querier-" + uuid.NewString()
	}
	q := &Querier{askers: askers, gate: gate, sched: sched, cfg: cfg, limits: map[string]*limiter{},
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "onceledger_provider_queries_total",
			Help: "Questions asked of the providers' APIs about expected or pending payments, by provider and outcome."},
			[]string{"provider", "outcome"})}
	for p := range askers {
		q.limits[p] = newLimiter(cfg.Rate, cfg.Now)
		for _, o := range []Outcome{OutcomePaid, OutcomePending, OutcomeNotExist, OutcomeClosed, OutcomeForged, OutcomeRateLimited, OutcomeError} {
			q.counter.WithLabelValues(p, string(o))
		}
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(q.counter)
	}
	return q
}

// Counter is the metric (tests read it).
func (q *Querier) Counter() *prometheus.CounterVec { return q.counter }

// Run sweeps until ctx ends.
func (q *Querier) Run(ctx context.Context) {
	for {
		n, err := q.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			q.cfg.Logger.Warn("provider queries: sweep failed; retrying", "error", err)
		}
		if n > 0 && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(q.cfg.Poll):
		}
	}
}

// Sweep claims the due expectations and asks about each, at each
// provider's rate; it returns how many it asked about.
func (q *Querier) Sweep(ctx context.Context) (int, error) {
	provs := make([]string, 0, len(q.askers))
	for p := range q.askers {
		provs = append(provs, p)
	}
	if len(provs) == 0 {
		return 0, nil
	}
	if q.cfg.PendingAfter > 0 {
		if _, err := q.sched.ScanPending(ctx, q.cfg.PendingAfter); err != nil {
			return 0, err
		}
	}
	due, err := q.sched.Claim(ctx, q.cfg.Owner, provs, q.cfg.Now(), q.cfg.Lease, q.cfg.Batch)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	// Workers per provider: a slow or rate-limited provider does not hold
	// the others back; within one provider, up to Concurrency questions are
	// in flight, taken in the order they fell due, and the first error
	// stops that provider's sweep (the rest of its claim is asked again
	// when the lease runs out).
	byProvider := map[string][]Due{}
	for _, d := range due {
		byProvider[d.Provider] = append(byProvider[d.Provider], d)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(due))
	for p, ds := range byProvider {
		var mu sync.Mutex
		next, failed := 0, false
		take := func() (Due, bool) {
			mu.Lock()
			defer mu.Unlock()
			if failed || next == len(ds) {
				return Due{}, false
			}
			next++
			return ds[next-1], true
		}
		for range min(q.cfg.Concurrency, len(ds)) {
			wg.Go(func() {
				for d, ok := take(); ok; d, ok = take() {
					if err := q.handle(ctx, d); err != nil {
						mu.Lock()
						failed = true
						mu.Unlock()
						errs <- fmt.Errorf("%s %s: %w", p, d.Reference, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	return len(due), errors.Join(func() []error {
		var out []error
		for e := range errs {
			out = append(out, e)
		}
		return out
	}()...)
}

// handle asks about one claimed expectation and reschedules it.
func (q *Querier) handle(ctx context.Context, d Due) error {
	out, err := q.Ask(ctx, d.Provider, d.Reference)
	if ctx.Err() != nil {
		return ctx.Err() // the lease runs out and another asks: nothing recorded twice
	}
	now := q.cfg.Now()
	var next time.Time
	attempts := d.Attempts
	var ra *RetryAfterError
	switch {
	case errors.As(err, &ra):
		next = now.Add(max(ra.After, q.cfg.Backoff/4))
	case err != nil:
		attempts++
		next = now.Add(q.backoff(attempts))
	case out == OutcomePaid, out == OutcomeClosed:
		// Done: the capture is recorded (the process manager pays the
		// expectation when the feed shows it), or there is nothing to
		// record.
	default:
		attempts++
		next = now.Add(q.backoff(attempts))
	}
	return q.sched.Reschedule(ctx, d, q.cfg.Owner, next, attempts)
}

func (q *Querier) backoff(attempts int) time.Duration {
	d := q.cfg.Backoff
	for i := 1; i < attempts && d < q.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, q.cfg.MaxBackoff)
}

// Ask asks provider about reference now, at the provider's rate, and
// records a paid answer through the gate; it returns the outcome, counted
// in the metric. A forged answer, an error or a time-out records nothing.
func (q *Querier) Ask(ctx context.Context, provider, reference string) (Outcome, error) {
	a, ok := q.askers[provider]
	if !ok {
		return OutcomeError, fmt.Errorf("provider %s is not asked (only %v are, when their API credentials are configured)", provider, q.providers())
	}
	lim := q.limits[provider]
	if paused := lim.paused(q.cfg.Poll); paused > 0 {
		// The provider said to wait (Retry-After): ask it nothing before
		// then; the question is deferred, not asked (not counted).
		return OutcomeRateLimited, &RetryAfterError{After: paused, Err: errors.New("the provider's Retry-After is running")}
	}
	if err := lim.wait(ctx); err != nil {
		return OutcomeError, err
	}
	askCtx, cancel := context.WithTimeout(ctx, q.cfg.Timeout)
	ans, err := a.Ask(askCtx, reference)
	cancel()
	var ra *RetryAfterError
	switch {
	case errors.As(err, &ra):
		lim.pause(ra.After)
		q.count(provider, OutcomeRateLimited)
		return OutcomeRateLimited, err
	case errors.Is(err, ErrForged):
		q.count(provider, OutcomeForged)
		q.cfg.Logger.Warn("provider query: the answer does not verify; nothing recorded", "provider", provider, "reference", reference, "error", err)
		return OutcomeForged, err
	case err != nil:
		q.count(provider, OutcomeError)
		return OutcomeError, err
	}
	if ans.Outcome == OutcomePaid {
		if _, err := q.gate.Ingest(ctx, ans.Event); err != nil {
			q.count(provider, OutcomeError)
			return OutcomeError, fmt.Errorf("recording the answer: %w", err)
		}
	}
	q.count(provider, ans.Outcome)
	return ans.Outcome, nil
}

func (q *Querier) providers() []string {
	out := make([]string, 0, len(q.askers))
	for p := range q.askers {
		out = append(out, p)
	}
	return out
}

func (q *Querier) count(provider string, o Outcome) {
	q.counter.WithLabelValues(provider, string(o)).Inc()
}

// limiter spaces one provider's questions at its rate, and holds them all
// while the provider's Retry-After runs.
type limiter struct {
	mu    sync.Mutex
	every time.Duration
	next  time.Time
	now   func() time.Time
}

func newLimiter(rate float64, now func() time.Time) *limiter {
	return &limiter{every: time.Duration(float64(time.Second) / rate), now: now}
}

func (l *limiter) wait(ctx context.Context) error {
	l.mu.Lock()
	now := l.now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.every)
	l.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	return nil
}

// paused is how long the provider's Retry-After still runs when that is
// more than horizon (a wait a sweep should not sit through); 0 otherwise.
func (l *limiter) paused(horizon time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.next.Sub(l.now()); d > horizon {
		return d
	}
	return 0
}

func (l *limiter) pause(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at := l.now().Add(d); at.After(l.next) {
		l.next = at
	}
}
