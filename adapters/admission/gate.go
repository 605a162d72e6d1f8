package admission

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// gate is the in-flight budget: requests doing work, by class.
//
// Why a concurrency limit and not a rate: what the server can absorb is
// what its ingest batches commit, and that varies with the machine, the
// batch size and the database; a cap on work in flight follows it by
// itself (Little's law: at the cap, throughput is whatever the server
// achieves and latency is cap/throughput), and what is beyond is refused
// before it costs a body read, a signature check or a parse. serve sizes it
// from the ingest batch (app.InFlightFor: 4 × ONCELEDGER_INGEST_BATCH, 256 by
// default, the per-provider cap measured in docs/benchmarks.md to leave
// room for group commit: two shared units committing and the arrivals
// gathering behind them), which keeps the latency of a full server near
// 100 ms at the throughput measured on 2 cores.
//
// A request that finds the budget spent waits up to QueueWait for a slot
// (an open-loop burst at 80 % of the maximum is absorbed instead of
// refused), in its class's queue; a freed slot goes to the highest class
// with a waiter it admits. Each queue is bounded by its class's cap, so
// waiting requests cost at most that many goroutines.
type gate struct {
	wait  time.Duration
	cap   [numClasses]int // per class; <0 = none
	below [numClasses]int // admitted only while total < below; <0 = none

	mu      sync.Mutex
	total   int
	n       [numClasses]int
	waiters [numClasses]*list.List // of *waiter
}

type waiter struct {
	ready chan struct{} // closed when admitted
	elem  *list.Element
}

func newGate(l Limits) *gate {
	g := &gate{wait: l.QueueWait}
	for i := range g.waiters {
		g.waiters[i] = list.New()
	}
	g.cap[Health], g.below[Health] = -1, -1
	g.cap[Webhook], g.below[Webhook] = l.MaxInFlight, l.MaxInFlight
	g.cap[Upload], g.below[Upload] = l.MaxInFlightUploads, fraction(l.MaxInFlight, 3, 4)
	g.cap[Read], g.below[Read] = l.MaxInFlightReads, fraction(l.MaxInFlight, 1, 2)
	return g
}

// fraction is n*num/den, at least 1; <0 (no limit) stays.
func fraction(n, num, den int) int {
	if n < 0 {
		return n
	}
	return max(1, n*num/den)
}

func (g *gate) admits(c Class) bool {
	return g.underCap(c) && (g.below[c] < 0 || g.total < g.below[c])
}

// underCap says whether class c is below its own cap.
func (g *gate) underCap(c Class) bool {
	return g.cap[c] < 0 || g.n[c] < g.cap[c]
}

// holdsBack says whether the waiters of class k keep lower classes out of
// a free slot: only when they could take it. Waiters at their own class's
// cap cannot (an upload waiting for one of the uploads' slots), and
// lower classes queuing behind them would be shed with the server idle.
func (g *gate) holdsBack(k Class) bool {
	return g.waiters[k].Len() > 0 && g.underCap(k)
}

// queuedAbove says whether a newcomer of class c must queue behind
// waiters: those of its own class (first come, first served) or of a
// higher one that could take the slot.
func (g *gate) queuedAbove(c Class) bool {
	if g.waiters[c].Len() > 0 {
		return true
	}
	for k := Health; k < c; k++ {
		if g.holdsBack(k) {
			return true
		}
	}
	return false
}

// acquire takes a slot of class c, waiting up to g.wait; ok false: shed.
func (g *gate) acquire(ctx context.Context, c Class) (release func(), ok bool) {
	g.mu.Lock()
	if g.admits(c) && !g.queuedAbove(c) {
		g.take(c)
		g.mu.Unlock()
		return g.releaser(c), true
	}
	if g.wait <= 0 || (g.cap[c] >= 0 && g.waiters[c].Len() >= g.cap[c]) {
		g.mu.Unlock()
		return nil, false
	}
	w := &waiter{ready: make(chan struct{})}
	w.elem = g.waiters[c].PushBack(w)
	g.mu.Unlock()

	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case <-w.ready:
		return g.releaser(c), true
	case <-t.C:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready: // admitted while timing out: the slot is ours
		return g.releaser(c), true
	default:
	}
	g.waiters[c].Remove(w.elem)
	return nil, false
}

func (g *gate) take(c Class) {
	g.n[c]++
	g.total++
}

func (g *gate) releaser(c Class) func() {
	var once sync.Once
	return func() { once.Do(func() { g.release(c) }) }
}

// release frees a slot of c and hands free slots to waiters, highest class
// first.
func (g *gate) release(c Class) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n[c]--
	g.total--
	for k := Health; k < numClasses; k++ {
		for g.waiters[k].Len() > 0 && g.admits(k) {
			w := g.waiters[k].Remove(g.waiters[k].Front()).(*waiter)
			g.take(k)
			close(w.ready)
		}
		if g.holdsBack(k) {
			// A higher class still waits for the total to fall: lower
			// ones do not overtake it.
			return
		}
	}
}

// inFlight is the work in flight of class c (for the gauge).
func (g *gate) inFlight(c Class) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n[c]
}
