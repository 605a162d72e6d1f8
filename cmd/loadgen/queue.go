package main

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/model"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/scenario"
)

// jobKind says why a delivery is sent.
type jobKind int

const (
	kindFirst    jobKind = iota // the delivery's first send (with its twin, if any)
	kindCopy                    // an identical redelivery after the first 2xx
	kindConflict                // a changed payload under the same id, after the first 2xx
)

type job struct {
	d    *scenario.Delivery
	kind jobKind
}

// cursor walks one active lifecycle's deliveries in order.
type cursor struct {
	lc *scenario.Lifecycle
	i  int
}

// queue hands out work to the senders. It keeps a window of active
// lifecycles and picks the next delivery from a random one, so payments
// interleave as they do at a provider, while each payment's own deliveries
// leave in their (possibly reordered) order. Follow-ups (redeliveries and
// conflicts) join the queue once their first delivery was answered 2xx.
//
// A lifecycle's facts enter the expected ledger when it is activated, and an
// activated lifecycle is always sent to the end: stopping (duration cap,
// first Ctrl-C) only stops activating new ones, so the model stays exact.
type queue struct {
	mu   sync.Mutex
	cond *sync.Cond
	rng  *rand.Rand
	gen  *scenario.Generator

	expected *model.Ledger
	window   int
	max      int       // payments to start; 0 = no limit
	deadline time.Time // zero = none

	// pending are lifecycles generated (and signed) before the run, in
	// the generator's order: activated before any new one is generated.
	pending     [][]scenario.Lifecycle
	active      []*cursor
	followups   []job
	outstanding int // jobs handed out and not yet Done
	stopped     bool
	aborted     bool
	err         error

	// What was activated and planned, for the report.
	payments, payouts, reordered int
	planned                      plan
}

type plan struct {
	First     int `json:"first"`
	Copies    int `json:"copies"`
	Twins     int `json:"twins"`
	Conflicts int `json:"conflicts"`
}

func (p plan) total() int { return p.First + p.Copies + p.Twins + p.Conflicts }

func newQueue(gen *scenario.Generator, seed uint64, window, max int, deadline time.Time) *queue {
	q := &queue{
		rng: rand.New(rand.NewPCG(seed, 0x717565756521)), gen: gen, expected: model.New(),
		window: max1(window), max: max, deadline: deadline,
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// canStart reports whether another payment may be activated. Called with mu held.
func (q *queue) canStart() bool {
	if q.stopped || q.aborted || q.err != nil {
		return false
	}
	if q.max > 0 && q.payments >= q.max {
		return false
	}
	return q.deadline.IsZero() || time.Now().Before(q.deadline)
}

// fill activates lifecycles up to the window. Called with mu held.
func (q *queue) fill() {
	for len(q.active) < q.window && q.canStart() {
		var lcs []scenario.Lifecycle
		if len(q.pending) > 0 {
			lcs = q.pending[0]
			q.pending[0] = nil
			q.pending = q.pending[1:]
		} else {
			lcs = q.gen.Payment()
		}
		for i := range lcs {
			lc := &lcs[i]
			for _, f := range lc.Facts {
				if err := q.expected.Apply(f); err != nil {
					q.err = err // a generator bug: stop cleanly and report
					return
				}
			}
			if lc.Payout {
				q.payouts++
			} else {
				q.payments++
			}
			if lc.Reordered {
				q.reordered++
			}
			for _, d := range lc.Deliveries {
				q.planned.First++
				q.planned.Copies += d.Copies
				if d.Twin {
					q.planned.Twins++
				}
				if d.Conflict != nil {
					q.planned.Conflicts++
				}
			}
			if len(lc.Deliveries) > 0 {
				q.active = append(q.active, &cursor{lc: lc})
			}
		}
	}
}

// Pregenerate generates, before the run, the lifecycles of payments
// payments, or of enough payments for deliveries deliveries when payments
// is 0, and has sign sign each of their deliveries: building and signing
// bodies (RSA for Alipay and WeChat Pay) then costs the generator nothing
// once the clock runs, so that its CPU, on the cores it shares with the
// server, is the sends alone. The lifecycles are activated in the same
// order as generated on the fly, so the run is the same.
func (q *queue) Pregenerate(payments, deliveries int, sign func(*scenario.Delivery) error) error {
	n, sent := 0, 0
	for (payments > 0 && n < payments) || (payments <= 0 && sent < deliveries) {
		lcs := q.gen.Payment()
		for i := range lcs {
			if !lcs[i].Payout {
				n++
			}
			for j := range lcs[i].Deliveries {
				d := &lcs[i].Deliveries[j]
				if err := sign(d); err != nil {
					return err
				}
				sent += 1 + d.Copies
				if d.Twin {
					sent++
				}
				if d.Conflict != nil {
					sent++
				}
			}
		}
		q.pending = append(q.pending, lcs)
	}
	return nil
}

// Prime activates the first window of lifecycles now, so that generating
// them is not on the first senders' path once the clock runs.
func (q *queue) Prime() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fill()
}

// Next blocks until there is a job, or returns false when all work is done
// (or the run was aborted).
func (q *queue) Next() (job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.aborted {
			return job{}, false
		}
		q.fill()
		// Follow-ups and new deliveries are mixed half and half, so
		// redeliveries arrive spread over the run, not in a burst at the end.
		if n := len(q.followups); n > 0 && (len(q.active) == 0 || q.rng.IntN(2) == 0) {
			i := q.rng.IntN(n)
			j := q.followups[i]
			q.followups[i] = q.followups[n-1]
			q.followups = q.followups[:n-1]
			q.outstanding++
			return j, true
		}
		if n := len(q.active); n > 0 {
			i := q.rng.IntN(n)
			c := q.active[i]
			j := job{d: &c.lc.Deliveries[c.i], kind: kindFirst}
			c.i++
			if c.i == len(c.lc.Deliveries) {
				q.active[i] = q.active[n-1]
				q.active = q.active[:n-1]
			}
			q.outstanding++
			return j, true
		}
		if q.outstanding == 0 {
			q.cond.Broadcast() // wake the other senders: nothing will come
			return job{}, false
		}
		q.cond.Wait() // an outstanding job may still add follow-ups
	}
}

// Done finishes a job handed out by Next, queueing its follow-ups first so
// the queue never looks empty while they are due.
func (q *queue) Done(followups []job) {
	q.mu.Lock()
	q.followups = append(q.followups, followups...)
	q.outstanding--
	q.mu.Unlock()
	q.cond.Broadcast()
}

// Stop activates no more lifecycles; the active ones are sent to the end.
func (q *queue) Stop() {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// Abort ends the run now; the expected ledger is then meaningless.
func (q *queue) Abort() {
	q.mu.Lock()
	q.aborted = true
	q.mu.Unlock()
	q.cond.Broadcast()
}
