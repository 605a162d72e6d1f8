package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections/outbound"
)

// Pager reads the committed outbound feed (outbound.Feed): a page never
// holds an event that is not committed, nor skips one that commits late.
type Pager interface {
	Page(ctx context.Context, q outbound.Query) (outbound.Page, error)
}

var _ Pager = (*outbound.Feed)(nil)

// SenderOptions tune a Sender; zero values take the defaults.
type SenderOptions struct {
	// Concurrency is how many POSTs one endpoint has in flight at most
	// (each on another stream). Default 64: the worker claims and records
	// a batch per round trip, so fewer slots meant smaller batches (at 16, a
	// payment.captured subscription at 1,000 webhooks/s had p50 2.8 s; at 64,
	// 59 ms: bench/run.sh outbound).
	Concurrency int
	// Rate is how many POSTs per second one endpoint gets at most.
	// Default 1,000: at 100, a subscription to payment.captured at 1,000
	// webhooks/s (about 400 captures/s) was 57 s behind after a 20 s run
	// (bench/run.sh outbound).
	Rate float64
	// Page is how many feed events one queueing step reads. Default 500.
	Page int
	// LeaseFor is a subscription lease's length; it is renewed every
	// third of it. Default 15 s.
	LeaseFor time.Duration
	// Poll is how often due retries are looked for without a wake-up, and
	// the longest wait for a commit. Default 1 s.
	Poll time.Duration
}

func (o SenderOptions) withDefaults() SenderOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if o.Rate <= 0 {
		o.Rate = 1000
	}
	if o.Page <= 0 {
		o.Page = 500
	}
	if o.LeaseFor <= 0 {
		o.LeaseFor = 15 * time.Second
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	return o
}

// replayPage is how many feed events one replay step reads: a replay is
// queued a page at a time, and only while its lane holds fewer than
// replayQueued events, so that it never floods the queue.
const (
	replayPage   = 100
	replayQueued = 500
)

// Disabled is told of a subscription the sender disabled (the retry
// schedule ran out): the app opens an operator's item for it.
type Disabled func(ctx context.Context, sub uuid.UUID, url, lastError string)

// Sender is the projector that delivers push subscriptions. Per
// subscription it queues the matching events of the committed feed after
// the subscription's checkpoint (moved in the same transaction as the
// queue rows), and an endpoint worker POSTs each stream's head, signed,
// in order: a stream's next event is sent only once the previous one was
// acknowledged; other streams go on meanwhile. Exactly one sender works
// on a subscription at a time across instances: it holds the
// subscription's lease (SenderStore.Lease).
type Sender struct {
	Feed   Pager
	Store  SenderStore
	Sealer *Sealer
	// Client POSTs (NewClient: the address check, no redirects, the
	// time-out).
	Client *http.Client
	// Now is the retry schedule's clock (tests inject one); default
	// time.Now. Jitter returns [0,1) (default math/rand).
	Now      func() time.Time
	Jitter   func() float64
	Options  SenderOptions
	Disabled Disabled
	Log      *slog.Logger
	// Owner names this sender's leases; default a random id.
	Owner string

	mu      sync.Mutex
	workers map[uuid.UUID]*worker

	wakeOnce sync.Once
	wake     chan struct{} // Wake's signal (one pending at most)
	woken    atomic.Bool   // lease at the next turn
}

func (s *Sender) init() {
	s.Options = s.Options.withDefaults()
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Jitter == nil {
		s.Jitter = defaultJitter
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if s.Client == nil {
		s.Client = NewClient(false)
	}
	if s.Owner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		s.Owner = "sender-" + hex.EncodeToString(b[:])
	}
	s.workers = map[uuid.UUID]*worker{}
	s.wakeOnce.Do(s.makeWake)
}

// Run delivers until ctx ends, then gives its leases up.
func (s *Sender) Run(ctx context.Context) error {
	s.init()
	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopWorkers()
		wg.Wait()
		_ = s.Store.Release(context.WithoutCancel(ctx), s.Owner)
	}()
	var leased []Leased
	var leasedAt time.Time
	idle := false
	for ctx.Err() == nil {
		if s.leaseDue(leased, leasedAt) {
			s.resetReplayAcked() // the lease counts the replay lanes afresh
			l, err := s.Store.Lease(ctx, s.Owner, s.Options.LeaseFor)
			if err != nil {
				s.Log.Warn("outbox: lease", "error", err)
				s.pause(ctx, s.Options.Poll)
				continue
			}
			leased, leasedAt = l, time.Now()
			s.reconcileWorkers(wctx, &wg, leased)
		}
		if len(leased) == 0 {
			s.pause(ctx, s.Options.Poll)
			continue
		}
		progressed, stale, err := s.step(ctx, leased, idle)
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("outbox: queueing", "error", err)
			s.pause(ctx, s.Options.Poll)
		}
		if stale {
			leasedAt = time.Time{}
		}
		idle = !progressed
	}
	return nil
}

// Wake tells the sender that a subscription was created or changed
// (enabled, replayed, patched, deleted): it leases again now instead of at
// the next renewal, so that a new subscription's first events are not held
// for up to a third of the lease (they were: 4.6 s in bench/run.sh
// outbound, the whole of its p99). Safe to call before Run and from any
// goroutine; wake-ups are coalesced.
func (s *Sender) Wake() {
	s.wakeOnce.Do(s.makeWake)
	s.woken.Store(true)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Sender) makeWake() { s.wake = make(chan struct{}, 1) }

// leaseDue says whether to lease now: on a wake-up, at each third of the
// lease, and every Poll while nothing is leased (another instance's
// subscription may have become free).
func (s *Sender) leaseDue(leased []Leased, at time.Time) bool {
	since := time.Since(at)
	return s.woken.Swap(false) || since >= s.Options.LeaseFor/3 || (len(leased) == 0 && since >= s.Options.Poll)
}

// pause waits d, or less if woken.
func (s *Sender) pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.wake:
	case <-ctx.Done():
	}
}

// waitCtx is ctx, also cancelled by a wake-up: a long poll of the feed
// ends on it, so that the sender leases at once.
func (s *Sender) waitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.wake:
			cancel()
		case <-wctx.Done():
		}
	}()
	return wctx, cancel
}

// reconcileWorkers runs one worker per leased subscription and stops the
// others; a running worker gets the subscription's current settings.
func (s *Sender) reconcileWorkers(ctx context.Context, wg *sync.WaitGroup, leased []Leased) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := map[uuid.UUID]bool{}
	for _, l := range leased {
		keep[l.ID] = true
		w := s.workers[l.ID]
		if w != nil && w.exited() {
			w = nil
		}
		if w == nil {
			w = newWorker(s, l)
			s.workers[l.ID] = w
			wctx, cancel := context.WithCancel(ctx)
			w.cancel = cancel
			wg.Go(func() { w.run(wctx) })
		}
		w.set(l)
		w.poke() // an enabled subscription's streams are due now
	}
	for id, w := range s.workers {
		if !keep[id] {
			w.cancel()
			delete(s.workers, id)
		}
	}
}

// replayAcked is how many replayed events of sub were delivered since the
// last lease.
func (s *Sender) replayAcked(sub uuid.UUID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.workers[sub]; w != nil {
		return int(w.replayAcked.Load())
	}
	return 0
}

// resetReplayAcked starts the counts again, before a lease counts the
// lanes (an ack recorded in between is subtracted twice: the replay's
// lane may hold that many more than replayQueued, a batch at most).
func (s *Sender) resetReplayAcked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		w.replayAcked.Store(0)
	}
}

func (s *Sender) poke(ids []uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if w := s.workers[id]; w != nil {
			w.poke()
		}
	}
}

// step queues one page for each group of subscriptions at the same
// position (one feed read serves them all) and one replay page for each
// replay under way; with wait, the first group waits for a commit. It
// updates leased's positions; stale means a checkpoint did not move as
// expected (another sender): lease again.
func (s *Sender) step(ctx context.Context, leased []Leased, wait bool) (progressed, stale bool, err error) {
	groups := map[eventstore.Position][]int{}
	var order []eventstore.Position
	for i, l := range leased {
		if _, ok := groups[l.Position]; !ok {
			order = append(order, l.Position)
		}
		groups[l.Position] = append(groups[l.Position], i)
	}
	var qs []Queueing
	var at []int // leased index of each qs entry
	var to []eventstore.Position
	for gi, pos := range order {
		q := outbound.Query{After: pos, Limit: s.Options.Page}
		pctx := ctx
		if wait && gi == 0 {
			q.Wait = s.Options.Poll
			var cancel context.CancelFunc
			pctx, cancel = s.waitCtx(ctx)
			defer cancel()
		}
		page, err := s.Feed.Page(pctx, q)
		if err != nil {
			if pctx.Err() != nil && ctx.Err() == nil {
				return false, false, nil // woken: lease first
			}
			return false, false, err
		}
		if page.Next == pos {
			continue
		}
		for _, i := range groups[pos] {
			rows, err := queueRows(leased[i].Filter, LaneLive, page.Events, time.Time{})
			if err != nil {
				return false, false, err
			}
			qs = append(qs, Queueing{Sub: leased[i].ID, From: pos, To: page.Next, Rows: rows})
			at, to = append(at, i), append(to, page.Next)
		}
	}
	for i, l := range leased {
		if l.Replay == nil || l.ReplayPending-s.replayAcked(l.ID) >= replayQueued {
			continue
		}
		q, err := s.replayStep(ctx, l)
		if err != nil {
			return false, false, err
		}
		qs = append(qs, q)
		at, to = append(at, i), append(to, q.To)
	}
	if len(qs) == 0 {
		return false, false, nil
	}
	moved, err := s.Store.Enqueue(ctx, s.Owner, s.Now(), qs)
	if err != nil {
		return false, false, err
	}
	var done []uuid.UUID
	for k, q := range qs {
		if !moved[k] {
			stale = true
			continue
		}
		if len(q.Rows) > 0 {
			done = append(done, q.Sub)
		}
		l := &leased[at[k]]
		switch {
		case !q.Replay:
			l.Position = to[k]
		case q.Done:
			l.Replay = nil
		default:
			l.Replay.From = to[k]
			l.ReplayPending += len(q.Rows)
		}
	}
	s.poke(done)
	return true, stale, nil
}

// replayStep reads one replay page of l: the events after its replay
// position up to its end, recorded from its FromTime.
func (s *Sender) replayStep(ctx context.Context, l Leased) (Queueing, error) {
	r := l.Replay
	page, err := s.Feed.Page(ctx, outbound.Query{After: r.From, Limit: replayPage})
	if err != nil {
		return Queueing{}, err
	}
	var evs []outbound.Event
	for _, e := range page.Events {
		if r.Until.Less(e.Position) {
			break
		}
		evs = append(evs, e)
	}
	rows, err := queueRows(l.Filter, LaneReplay, evs, r.FromTime)
	if err != nil {
		return Queueing{}, err
	}
	q := Queueing{Sub: l.ID, Replay: true, From: r.From, To: page.Next, Rows: rows}
	if !page.Next.Less(r.Until) || page.Next == r.From {
		q.Done = true
	}
	return q, nil
}
