package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/scenario"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/sign"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/stats"
)

// counters are the outcomes of every HTTP attempt, and of logical deliveries.
type counters struct {
	Requests atomic.Int64 // HTTP attempts
	Accepted atomic.Int64
	// Acknowledged: Alipay's 200 "success", WeChat Pay's 204 with no body
	// (answers that do not tell a first arrival from a duplicate).
	Acknowledged atomic.Int64
	Duplicate    atomic.Int64
	Ignored      atomic.Int64
	Other2xx     atomic.Int64 // 2xx with an unexpected body
	Status4xx    atomic.Int64
	Status5xx    atomic.Int64 // other than shed
	Shed         atomic.Int64 // 429 or 503 with Retry-After: refused before any work, to retry
	StatusOther  atomic.Int64 // 1xx/3xx
	Transport    atomic.Int64 // no HTTP answer (connection error, client timeout)
	Retries      atomic.Int64
	Delivered    atomic.Int64 // deliveries answered 2xx (each counts once, retries or not)
	Undelivered  atomic.Int64 // deliveries that exhausted their attempts
	Unanswered   atomic.Int64 // deliveries cut by the run's hard end before a 2xx
}

// answers checks the exactly-once contract on the wire: over all deliveries
// of one dedup key, exactly one is answered as a first arrival ("accepted"
// or "ignored"), every other one "duplicate". A key that saw a transport
// error is exempt: the request may have been recorded without its answer
// reaching us, and its retry then rightly says "duplicate".
//
// Alipay and WeChat Pay answer every delivery alike (200 "success", 204):
// their keys are exempt from the count, the ledger comparison is what
// shows a double booking there; but a 2xx other than the provider's exact
// acknowledgement is a violation (Alipay retries anything but "success",
// and WeChat never retries a 200, so a 200 carrying FAIL loses the fact).
type answers struct {
	mu   sync.Mutex
	keys map[string]*keyAnswers
	// conflicting redeliveries answered other than "duplicate"
	conflictBad []string
	conflictOK  int
	ackBad      []string // 2xx answers to Alipay or WeChat Pay other than their acknowledgement
}

type keyAnswers struct {
	firsts    int
	delivered bool
	uncertain bool
	opaque    bool // answered "acknowledged": first or duplicate cannot be told
}

// Outcomes of Alipay's and WeChat Pay's answers (sender.attempt).
const (
	outcomeAcknowledged = "acknowledged"
	outcomeNotAcked     = "not acknowledged: "
)

func newAnswers() *answers { return &answers{keys: map[string]*keyAnswers{}} }

func (a *answers) key(k string) *keyAnswers {
	ka := a.keys[k]
	if ka == nil {
		ka = &keyAnswers{}
		a.keys[k] = ka
	}
	return ka
}

func (a *answers) answered(k string, kind jobKind, outcome string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ka := a.key(k)
	ka.delivered = true
	if outcome == "accepted" || outcome == "ignored" {
		ka.firsts++
	}
	if outcome == outcomeAcknowledged || strings.HasPrefix(outcome, outcomeNotAcked) {
		ka.opaque = true
		if outcome != outcomeAcknowledged {
			a.ackBad = append(a.ackBad, k+" "+outcome)
		}
	}
	if kind == kindConflict {
		if outcome == "duplicate" || outcome == outcomeAcknowledged {
			a.conflictOK++
		} else {
			a.conflictBad = append(a.conflictBad, fmt.Sprintf("%s answered %q", k, outcome))
		}
	}
}

func (a *answers) uncertain(k string) {
	a.mu.Lock()
	a.key(k).uncertain = true
	a.mu.Unlock()
}

// violations lists the keys that broke the rule, sorted for stable output.
func (a *answers) violations() (checked int, bad []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, ka := range a.keys {
		if ka.uncertain || !ka.delivered || ka.opaque {
			continue
		}
		checked++
		if ka.firsts != 1 {
			bad = append(bad, fmt.Sprintf("%s answered as a first arrival %d times", k, ka.firsts))
		}
	}
	sortStrings(bad)
	bad = append(bad, a.conflictBad...)
	return checked, append(bad, a.ackBad...)
}

// sender delivers webhooks like a provider: signs each attempt afresh,
// retries every non-2xx with exponential backoff, and takes a 2xx as final.
type sender struct {
	base         string   // server URL without trailing slash
	bases        []string // several instances: attempts round-robin (else base)
	next         atomic.Uint64
	client       *http.Client
	stripeSecret string
	standard     *sign.Standard
	wechatpay    *sign.Wechatpay // signs each WeChat Pay attempt's headers
	maxAttempts  int
	backoff      time.Duration // first retry delay; doubles, capped at maxBackoff
	maxBackoff   time.Duration

	latency stats.Recorder
	// late: how far behind its scheduled time each open-loop send left, on
	// time (0) included: every sender busy (the server past its knee), or
	// the generator itself waiting for a CPU it shares with the server.
	late     stats.Recorder
	openLoop bool
	retrying sync.WaitGroup // jobs finishing their retries off the senders (work)
	c        counters
	ans      *answers
	pace     *pacer

	logMu  sync.Mutex
	logged int
	logf   func(format string, args ...any)
}

// note logs the first few problems, so a broken setup (bad secret, wrong
// URL) is visible without flooding the output.
func (s *sender) note(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.logged++
	if s.logged <= 10 {
		s.logf(format, args...)
	} else if s.logged == 11 {
		s.logf("(further delivery problems not shown)")
	}
}

// work is one sender's loop. A job whose first attempt must be retried
// (open loop) finishes on a goroutine of its own (later), so that the
// sender takes its next slot instead of sleeping through the retry's
// wait: a provider retries on its own schedule, beside its new events.
// The queue counts the job outstanding until then.
func (s *sender) work(ctx context.Context, q *queue) {
	for {
		j, ok := q.Next()
		if !ok {
			return
		}
		fs, later := s.run(ctx, j)
		if later == nil {
			q.Done(fs)
			continue
		}
		s.retrying.Add(1)
		go func() {
			defer s.retrying.Done()
			q.Done(later())
		}()
	}
}

// run sends one job and returns its follow-ups. Its first request is built
// and signed before the sender sleeps until the job's slot, so that what
// the sender does between waking and sending is the send itself: on cores
// it shares with the server, every microsecond of work there is a chance
// to leave late.
//
// In open loop, a first attempt that must be retried returns later: the
// rest of the delivery (its retries, then its follow-ups), for the caller
// to run on another goroutine; so does a twin pair (3 % of the
// deliveries), from its slot on.
func (s *sender) run(ctx context.Context, j job) (fs []job, later func() []job) {
	body, signed := j.d.Body, j.d.Signed
	if j.kind == kindConflict {
		body, signed = j.d.Conflict, j.d.ConflictSigned
	}
	if j.kind != kindFirst || !j.d.Twin {
		sched := s.pace.take(1)
		req, err := s.requestSigned(ctx, j.d, body, signTime(sched), signed)
		s.pace.sleepUntil(ctx, sched)
		res, wait := s.try(ctx, j.d, body, j.kind, 1, sched, req, err)
		finish := func(ok bool) []job {
			if j.kind != kindFirst || !ok {
				return nil
			}
			return followups(j.d)
		}
		if res != tryRetry {
			return finish(res == tryDelivered), nil
		}
		if s.openLoop {
			return nil, func() []job { return finish(s.retry(ctx, j.d, body, j.kind, 2, wait)) }
		}
		return finish(s.retry(ctx, j.d, body, j.kind, 2, wait)), nil
	}
	// A twin: the same delivery from two senders at the same instant, the
	// race the inbox's primary key must decide.
	sched := s.pace.take(2)
	req, err := s.requestSigned(ctx, j.d, body, signTime(sched), signed)
	twinReq, twinErr := s.requestSigned(ctx, j.d, body, signTime(sched), signed)
	pair := func() []job {
		s.pace.sleepUntil(ctx, sched)
		start := make(chan struct{})
		var wg sync.WaitGroup
		var twinOK atomic.Bool
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			twinOK.Store(s.deliverAt(ctx, j.d, body, kindCopy, sched, twinReq, twinErr))
		}()
		close(start)
		ok := s.deliverAt(ctx, j.d, body, kindFirst, sched, req, err)
		wg.Wait()
		if !ok && !twinOK.Load() {
			return nil
		}
		return followups(j.d)
	}
	if s.openLoop {
		// Off the sender: the pair may wait for retries, and a sender
		// waiting for it would leave its next slots late.
		return nil, pair
	}
	return pair(), nil
}

// signTime is the signature timestamp of a request built ahead of its slot:
// the slot itself (a past slot, or none, is signed now).
func signTime(sched time.Time) time.Time {
	if now := time.Now(); sched.Before(now) {
		return now
	}
	return sched
}

func followups(d *scenario.Delivery) []job {
	var out []job
	for range d.Copies {
		out = append(out, job{d: d, kind: kindCopy})
	}
	if d.Conflict != nil {
		out = append(out, job{d: d, kind: kindConflict})
	}
	return out
}

// deliver is deliverAt for a delivery with no slot in a schedule.
func (s *sender) deliver(ctx context.Context, d *scenario.Delivery, body []byte, kind jobKind) bool {
	req, err := s.request(ctx, d, body, time.Now())
	return s.deliverAt(ctx, d, body, kind, time.Time{}, req, err)
}

// deliverAt sends body until a 2xx or maxAttempts, and reports whether it got
// a 2xx. first is the first attempt's request, built ahead (or the error
// building it); retries are built and signed afresh. sched is the
// delivery's slot in the pacer's schedule (zero when unpaced): in open-loop
// mode the first attempt's latency counts from it, so time spent waiting
// for a free sender behind a slow server, or for the generator's own turn
// on a busy CPU, is latency too (no coordinated omission).
func (s *sender) deliverAt(ctx context.Context, d *scenario.Delivery, body []byte, kind jobKind, sched time.Time, first *http.Request, firstErr error) bool {
	res, wait := s.try(ctx, d, body, kind, 1, sched, first, firstErr)
	if res != tryRetry {
		return res == tryDelivered
	}
	return s.retry(ctx, d, body, kind, 2, wait)
}

// retry sends d again from attempt number attempt, each after its wait
// (the first one's given), until a 2xx or maxAttempts; retries are built
// and signed afresh. It reports whether d got a 2xx.
func (s *sender) retry(ctx context.Context, d *scenario.Delivery, body []byte, kind jobKind, attempt int, wait time.Duration) bool {
	for ; ; attempt++ {
		if !sleep(ctx, wait) {
			s.ans.uncertain(d.Provider + "/" + d.ID) // an earlier attempt may have been recorded unanswered
			return s.cut(ctx)
		}
		req, err := s.request(ctx, d, body, time.Now())
		var res tryResult
		res, wait = s.try(ctx, d, body, kind, attempt, time.Time{}, req, err)
		if res != tryRetry {
			return res == tryDelivered
		}
	}
}

// tryResult is what one attempt of a delivery came to.
type tryResult int

const (
	tryDelivered tryResult = iota // a 2xx: final
	tryFailed                     // no more attempts (or the run ended)
	tryRetry                      // to be retried after the wait try returns
)

// try sends one attempt (number attempt) of d and counts its outcome;
// sched is the slot latency counts from (first attempt, open loop).
func (s *sender) try(ctx context.Context, d *scenario.Delivery, body []byte, kind jobKind, attempt int, sched time.Time, req *http.Request, err error) (tryResult, time.Duration) {
	key := d.Provider + "/" + d.ID
	origin := time.Time{}
	if attempt == 1 && s.openLoop {
		origin = sched
	}
	var status int
	var outcome string
	var retryAfter time.Duration
	if err == nil {
		status, outcome, retryAfter, err = s.attempt(req, origin, d.Provider)
	}
	switch {
	case err != nil:
		if ctx.Err() != nil {
			// Cut or aborted with the request possibly recorded: its
			// key's first arrival may be this unanswered one.
			s.ans.uncertain(key)
			s.cut(ctx) // aborted: neither delivered nor a failure of the server
			return tryFailed, 0
		}
		s.c.Transport.Add(1)
		s.ans.uncertain(key)
		s.note("%s %s attempt %d: %v", key, d.Type, attempt, err)
	case status >= 200 && status < 300:
		switch outcome {
		case "accepted":
			s.c.Accepted.Add(1)
		case "duplicate":
			s.c.Duplicate.Add(1)
		case "ignored":
			s.c.Ignored.Add(1)
		case outcomeAcknowledged:
			s.c.Acknowledged.Add(1)
		default:
			s.c.Other2xx.Add(1)
		}
		s.c.Delivered.Add(1)
		s.ans.answered(key, kind, outcome)
		return tryDelivered, 0
	case retryAfter >= 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable):
		// Shed by admission before any work: what the server says
		// when it is full, apart from its failures.
		s.c.Shed.Add(1)
	case status >= 400 && status < 500:
		s.c.Status4xx.Add(1)
		s.note("%s %s attempt %d: HTTP %d %s", key, d.Type, attempt, status, outcome)
	case status >= 500:
		s.c.Status5xx.Add(1)
		s.note("%s %s attempt %d: HTTP %d %s", key, d.Type, attempt, status, outcome)
	default:
		s.c.StatusOther.Add(1)
	}
	if attempt >= s.maxAttempts {
		s.c.Undelivered.Add(1)
		s.note("%s %s: gave up after %d attempts", key, d.Type, attempt)
		return tryFailed, 0
	}
	s.c.Retries.Add(1)
	return tryRetry, s.delay(attempt, retryAfter)
}

// delay is the wait before retry number attempt: exponential with jitter
// (half fixed, half random, so synchronized failures spread out), at least
// the server's Retry-After when it sent one, within the cap.
func (s *sender) delay(attempt int, retryAfter time.Duration) time.Duration {
	d := s.backoff << min(attempt-1, 20)
	if d > s.maxBackoff || d <= 0 {
		d = s.maxBackoff
	}
	d = d/2 + rand.N(d/2+1)
	if retryAfter > d {
		d = min(retryAfter, s.maxBackoff)
	}
	return d
}

// cut counts a delivery that the run's end stopped before a 2xx: at the
// hard end (a deadline) it is unanswered, a failure; after a second
// Ctrl-C (an abort) it is neither. It returns false (not delivered).
func (s *sender) cut(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.c.Unanswered.Add(1)
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// request builds one signed attempt of d, its signature dated at.
func (s *sender) request(ctx context.Context, d *scenario.Delivery, body []byte, at time.Time) (*http.Request, error) {
	return s.requestSigned(ctx, d, body, at, nil)
}

// presignMaxAge is how old a signature made before the run may be when it
// is sent: within the server's default replay window (5 minutes,
// ONCELEDGER_WEBHOOK_TOLERANCE) with a margin. An older one is made again.
const presignMaxAge = 4 * time.Minute

// requestSigned is request with the headers signed before the run
// (Delivery.Signed, ConflictSigned), when given and not too old.
func (s *sender) requestSigned(ctx context.Context, d *scenario.Delivery, body []byte, at time.Time, signed http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.target()+"/webhooks/"+d.Provider, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if signed != nil && time.Since(d.SignedAt) < presignMaxAge {
		for k, v := range signed {
			req.Header[k] = v // shared, read-only: the transport only reads them
		}
		return req, nil
	}
	if err := s.sign(req.Header, d, body, at); err != nil {
		return nil, err
	}
	return req, nil
}

// sign sets the headers of one attempt of d with body, signed at at.
func (s *sender) sign(h http.Header, d *scenario.Delivery, body []byte, at time.Time) error {
	h.Set("Content-Type", "application/json")
	switch d.Provider {
	case scenario.Stripe:
		h.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
		h.Set("Stripe-Signature", sign.Stripe(s.stripeSecret, at, body))
	case scenario.Standard:
		h.Set("User-Agent", "onceledger-loadgen")
		s.standard.Headers(h, d.ID, at, body)
	case scenario.Alipay: // signed in the body by the generator
		h.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		h.Set("User-Agent", "Mozilla/4.0")
	case scenario.Wechatpay:
		h.Set("User-Agent", "Mozilla/4.0")
		if s.wechatpay == nil {
			return fmt.Errorf("no signer for provider %q", d.Provider)
		}
		if err := s.wechatpay.Headers(h, at, body); err != nil {
			return err
		}
	default:
		return fmt.Errorf("no signer for provider %q", d.Provider)
	}
	return nil
}

// presign signs d's body and its conflict now (queue.Pregenerate).
func (s *sender) presign(d *scenario.Delivery) error {
	at := time.Now()
	d.Signed, d.SignedAt = http.Header{}, at
	if err := s.sign(d.Signed, d, d.Body, at); err != nil {
		return fmt.Errorf("presign %s %s: %w", d.Provider, d.ID, err)
	}
	if d.Conflict != nil {
		d.ConflictSigned = http.Header{}
		if err := s.sign(d.ConflictSigned, d, d.Conflict, at); err != nil {
			return fmt.Errorf("presign %s %s: %w", d.Provider, d.ID, err)
		}
	}
	return nil
}

// attempt sends one signed request; retryAfter is the answer's
// Retry-After in seconds, -1 when it has none. outcome is the body's "status" (or
// "error", or WeChat Pay's "message") field; for a 2xx to Alipay or WeChat
// Pay, "acknowledged" when it is exactly the provider's acknowledgement
// (cnOutcome). Its latency is measured from origin when set (the
// scheduled send time, open loop), else from the moment it is sent. An
// open-loop send records how far behind its slot it left, on time included.
func (s *sender) attempt(req *http.Request, origin time.Time, provider string) (status int, outcome string, retryAfter time.Duration, err error) {
	s.c.Requests.Add(1)
	t0 := time.Now()
	if !origin.IsZero() {
		s.late.Record(max(t0.Sub(origin), 0))
		t0 = origin
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.latency.Record(time.Since(t0))
		return 0, "", -1, err
	}
	raw, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	s.latency.Record(time.Since(t0)) // the answer, body included
	if rerr != nil {
		return 0, "", -1, fmt.Errorf("read answer: %w", rerr)
	}
	var ans struct {
		Status  string `json:"status"`
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &ans) == nil {
		outcome = ans.Status
		if outcome == "" && ans.Error != "" {
			outcome = ans.Error
		}
		if outcome == "" && ans.Message != "" {
			outcome = ans.Message
		}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 && (provider == scenario.Alipay || provider == scenario.Wechatpay) {
		outcome = cnOutcome(provider, resp.StatusCode, raw)
	}
	retryAfter = -1
	if v := resp.Header.Get("Retry-After"); v != "" {
		retryAfter = 0 // present (an HTTP date counts as "retry soon")
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			retryAfter = time.Duration(secs) * time.Second
		}
	}
	return resp.StatusCode, outcome, retryAfter, nil
}

// cnOutcome classifies a 2xx to Alipay or WeChat Pay (docs/reference.md):
// Alipay's acknowledgement is 200 with the body exactly "success" (no
// newline); WeChat Pay's is 204 with no body. Anything else is not one.
func cnOutcome(provider string, status int, body []byte) string {
	switch {
	case provider == scenario.Alipay && status == http.StatusOK && string(body) == "success":
		return outcomeAcknowledged
	case provider == scenario.Wechatpay && status == http.StatusNoContent && len(body) == 0:
		return outcomeAcknowledged
	}
	return fmt.Sprintf("%s%d %q", outcomeNotAcked, status, body)
}

// target is the server of the next attempt: round-robin over several
// instances, as a load balancer would spread them, so that a retry after a
// failure goes to another instance.
func (s *sender) target() string {
	if len(s.bases) < 2 {
		return s.base
	}
	return s.bases[(s.next.Add(1)-1)%uint64(len(s.bases))]
}

// pacer spaces deliveries at a fixed rate across all senders: the n-th
// delivery leaves at start + n/rate. nil means as fast as possible.
type pacer struct {
	start    time.Time
	interval time.Duration
	n        atomic.Int64
}

func newPacer(rate float64) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{start: time.Now(), interval: time.Duration(float64(time.Second) / rate)}
}

// take takes the next k slots and returns the first one's scheduled time
// (zero for an unpaced run). A slot already past is taken all the same:
// the schedule never stretches.
func (p *pacer) take(k int64) time.Time {
	if p == nil {
		return time.Time{}
	}
	n := p.n.Add(k) - k
	return p.start.Add(time.Duration(n) * p.interval)
}

// sleepUntil waits for a slot taken by take; a slot already past (or none)
// returns at once.
func (p *pacer) sleepUntil(ctx context.Context, at time.Time) {
	if p == nil || at.IsZero() {
		return
	}
	if d := time.Until(at); d > 0 {
		sleep(ctx, d)
	}
}

// wait takes the next k slots and sleeps until the first one is due; it
// returns that slot's scheduled time (zero for an unpaced run).
func (p *pacer) wait(ctx context.Context, k int64) time.Time {
	at := p.take(k)
	p.sleepUntil(ctx, at)
	return at
}

var errNoSecret = errors.New("missing signing secret")
