package ingest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Group commit: concurrent first arrivals share one unit of work (docs/design.md,
// "Throughput: one commit for many deliveries"). One transaction per
// delivery caps ingest at the database's per-transaction ceiling (round
// trips, WAL flushes); a shared one pays those once for the whole batch.
//
// The protocol of a batch, over a BatchJournal: the shared unit's
// (sharedUnit, shared.go: one gate, decisions in memory, one append), then
// the commit, and only then each delivery's answer.
//
// A delivery that cannot share the unit is recorded alone, by the single
// path (recordOnce and its retry), never failing its neighbours:
//   - a redelivery of a key on record is answered "duplicate" in the unit
//     (and counted by the gate) when it is a plain one: same
//     facts, first arrival recorded. Any other (different facts: a conflict
//     to keep; a row still "received" to re-drive) is sent to the single
//     path as soon as the gate says so, uncounted;
//   - a decision that fails, or an append that cannot be made at the
//     version read (another writer won the stream, its event ids are stored
//     already), has its inbox row withdrawn from the unit and is sent there
//     after the commit;
//   - a unit that fails as a whole (a lost connection, a deadlock) sends all
//     its deliveries there.
//
// At most one delivery per stream and per dedup key joins a batch: the next
// one waits for the next batch, where it is decided on the history the first
// one wrote, instead of losing the race to its neighbour.
//
// A twin (a redelivery with the same facts, arriving while a delivery of its
// key is queued in a batch or in flight: a provider retrying a slow answer)
// runs no unit of its own. It waits for its first arrival's unit and takes
// its result: once that unit committed the first arrival's row, the twin is
// a plain duplicate. A twin that was there when the batch was taken (it
// queued with its first arrival: a provider's concurrent retries) is
// counted by the unit's own gate, with its first arrival (GateItem.Twins),
// so it costs no statement and no commit of its own; a later one is
// counted on the row (CountTwins) after that commit. Either is answered
// only after its count committed; if the unit rolled back, or left the
// first arrival alone, the twin is recorded alone too, after it, and
// judged by the gate like any redelivery (nothing of it was counted: the
// gate's count rolled back or did not match). So no twin is answered
// before a commit holds its key's facts.
//
// Batching adapts to the load: nothing waits for company. The first arrival
// starts a batch at once; deliveries arriving while a batch is in flight
// queue and form the next one (up to BatchSize), so batches are as large as
// the concurrency and the commit latency make them.

// BatchJournal is a Journal that can run one unit of work for several first
// arrivals (adapters/postgres: one transaction). Only an atomic journal can:
// its unit either commits every member's row and facts, or none.
type BatchJournal interface {
	Journal
	// DoBatch runs fn as one unit of work: committed when fn returns nil,
	// rolled back when it returns an error.
	DoBatch(ctx context.Context, fn func(BatchTx) error) error
	// CountTwins counts n[i] more deliveries on the committed row of
	// keys[i] (delivery_count, last seen), committed when it returns nil:
	// the twins answered from their first arrival's unit.
	CountTwins(ctx context.Context, keys []InboxKey, n []int) error
}

// BatchTx is the journal inside a shared unit of work.
type BatchTx interface {
	// GateAll inserts the inbox rows of items with their status unless
	// their key is on record (the primary key judges each, in one
	// statement), and reads the streams named by the items' Read, after the
	// insert. The answer is in item order. A redelivery that is a plain
	// duplicate (its key's row is not "received" and holds the same facts
	// hash) is counted on that row (delivery_count, with its Twins) in the
	// unit, and First
	// is that row; for any other redelivery First.Status is "" (record it
	// alone: nothing of it was written). The items' keys are distinct;
	// several may name one stream to read (an import set), each first
	// arrival then gets its history.
	GateAll(ctx context.Context, items []GateItem) ([]Gated, error)
	// AppendAll appends each append's events after its Read events, all in
	// the unit. An append that cannot be made at that version (the stream
	// moved, an event id is stored) is left out, none of its events
	// written, and its index returned; the others are written.
	AppendAll(ctx context.Context, appends []BatchAppend) (rejected []int, err error)
	// Withdraw deletes the inbox rows this unit inserted for keys: their
	// deliveries are recorded alone after the unit.
	Withdraw(ctx context.Context, keys []InboxKey) error
}

// GateItem is one delivery at the shared gate.
type GateItem struct {
	Event  delivery.Event
	Status string
	// Facts is Event.FactsHash(), when the caller has it already ("": the
	// journal computes it).
	Facts string
	// Twins are further arrivals of the key, with the same facts, answered
	// from this one's result (group commit): the gate counts them on the
	// row with it (delivery_count), inserted or a plain redelivery, so that
	// no transaction of their own counts them after the commit.
	Twins int
	Read  string // the stream to read after the gate; "" none
	// From is the first version of Read to read: the events before it are
	// folded already (a kept fold, folds.go). Items naming one stream name
	// the same From.
	From int
}

// BatchAppend is one delivery's decision in a shared unit.
type BatchAppend struct {
	Stream string
	Read   int // events read: the expected version is the one decided on
	Events []eventstore.EventData
}

// BatchOptions tune group commit. Zero values take the defaults.
type BatchOptions struct {
	// Size caps the deliveries of one shared unit; 1 turns group commit
	// off (every delivery its own unit). Default 64.
	Size int
	// InFlight is how many shared units may run at once: while one waits
	// for its commit, the next one gathers and gates. Default 2.
	InFlight int
	// Timeout bounds one shared unit; a member whose own deadline ends
	// first stops waiting (and answers an error) without failing the unit.
	// Default 30s.
	Timeout time.Duration
	// AfterCommit, if set, is called after a shared unit committed
	// deliveries and before they are answered, with their number (a unit
	// that recorded none does not call it). A test hook: a crash there is
	// the window where facts are durable and no sender knows.
	AfterCommit func(n int)
}

func (o BatchOptions) withDefaults() BatchOptions {
	if o.Size <= 0 {
		o.Size = 64
	}
	if o.InFlight <= 0 {
		o.InFlight = 2
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return o
}

// batcher gathers concurrent first arrivals into shared units.
type batcher struct {
	s       *Service
	journal BatchJournal
	opts    BatchOptions

	mu      sync.Mutex
	queue   []*member
	running int // batch loops
	// The dedup keys (with the member holding each) and streams of the
	// units in flight. A delivery that names one waits in the queue for
	// that unit to end: in a unit of its own it would wait on that unit's
	// row locks anyway, holding up all its neighbours (a redelivery racing
	// its first arrival), or lose the race for the stream and be recorded
	// alone after all. A twin of the key's member waits on that member
	// instead (member.twins) and runs no unit at all.
	busyKeys    map[InboxKey]*member
	busyStreams map[string]bool
}

// member is one delivery waiting for its batch.
type member struct {
	ctx  context.Context
	ev   delivery.Event
	done chan outcome // buffered: the batch never blocks on a member
	// twins answered from this member's unit (guarded by batcher.mu)
	twins []*member
	// gated: how many of twins were there when the batch was taken, and so
	// are counted by the unit's gate (GateItem.Twins) with the member.
	gated int
	// stream is ev's stream ("" for an ignored delivery), and facts its
	// facts hash once asked (guarded by batcher.mu): take looks at every
	// queued member on every batch, so under a backlog these were
	// computed again and again while the lock was held.
	stream string
	facts  string
}

// factsHash is m.ev.FactsHash(), computed once. Called with mu held.
func (m *member) factsHash() string {
	if m.facts == "" {
		m.facts = m.ev.FactsHash()
	}
	return m.facts
}

// outcome of a member: alone means "record it by the single path".
type outcome struct {
	res   Result
	err   error
	alone bool
}

func newBatcher(s *Service, j Journal, o BatchOptions) *batcher {
	bj, ok := j.(BatchJournal)
	if !ok || !j.Atomic() {
		return nil
	}
	o = o.withDefaults()
	if o.Size <= 1 {
		return nil
	}
	return &batcher{s: s, journal: bj, opts: o}
}

// record records ev in a shared unit. alone: the caller records it by the
// single path (nothing of it was kept).
func (b *batcher) record(ctx context.Context, ev delivery.Event) (Result, bool, error) {
	// The facts hash and the stream are computed here, outside the lock:
	// take and twin need them under it, and the gate needs the hash anyway.
	m := &member{ctx: ctx, ev: ev, done: make(chan outcome, 1), facts: ev.FactsHash()}
	if !ev.Ignored() {
		m.stream = ev.StreamID()
	}
	b.mu.Lock()
	if !b.twin(m) {
		b.queue = append(b.queue, m)
		if b.running < b.opts.InFlight {
			b.running++
			go b.loop()
		}
	}
	b.mu.Unlock()
	select {
	case o := <-m.done:
		return o.res, o.alone, o.err
	case <-ctx.Done():
		// The unit may still commit this delivery's facts: an error answer
		// (503) after a commit is safe, the retry is a duplicate.
		return Result{}, false, fmt.Errorf("%w: %w", eventstore.ErrUnavailable, ctx.Err())
	}
}

// loop runs batches while deliveries are queued.
func (b *batcher) loop() {
	for {
		b.mu.Lock()
		batch := b.take()
		if len(batch) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		answers := b.run(batch)
		b.mu.Lock()
		twins := make([][]*member, len(batch))
		for i, m := range batch {
			twins[i], m.twins = m.twins, nil
			delete(b.busyKeys, InboxKey{m.ev.Provider, m.ev.DedupKey})
			if m.stream != "" {
				delete(b.busyStreams, m.stream)
			}
		}
		b.mu.Unlock()
		b.answerTwins(batch, answers, twins)
	}
}

// twin attaches m to the member holding its key in a batch (queued in it or
// in flight) when m is a twin of it (same facts), and says so. Called with
// mu held.
func (b *batcher) twin(m *member) bool {
	owner := b.busyKeys[InboxKey{m.ev.Provider, m.ev.DedupKey}]
	if owner == nil || owner.factsHash() != m.factsHash() {
		return false
	}
	owner.twins = append(owner.twins, m)
	return true
}

// answerTwins answers the twins of batch's members, once the batch's unit
// ended (answers: how each member was answered, as run returns). The twins
// of a member the committed unit recorded are counted on its row and
// answered duplicates of it; all others (the unit rolled back, the member
// went alone, the count failed) are recorded alone, where the gate judges
// them after their first arrival.
func (b *batcher) answerTwins(batch []*member, answers []outcome, twins [][]*member) {
	var keys []InboxKey
	var counts []int
	for i, m := range batch {
		// The first m.gated twins were counted by the unit's gate, in its
		// commit; only those that came later need a count of their own.
		if late := len(twins[i]) - m.gated; late > 0 && !answers[i].alone && answers[i].err == nil {
			keys, counts = append(keys, InboxKey{m.ev.Provider, m.ev.DedupKey}), append(counts, late)
		}
	}
	counted := true
	if len(keys) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), b.opts.Timeout)
		counted = b.journal.CountTwins(ctx, keys, counts) == nil
		cancel()
	}
	for i, m := range batch {
		recorded := !answers[i].alone && answers[i].err == nil
		for n, t := range twins[i] {
			o := outcome{alone: true}
			if recorded && (n < m.gated || counted) {
				o = outcome{res: Result{Outcome: Duplicate, StreamID: answers[i].res.StreamID}}
			}
			t.done <- o
		}
	}
}

// take removes up to Size queued members, at most one per stream and per
// dedup key, none of a unit in flight (the rest stay queued, in order, for
// a next batch: the loop running that unit takes them when it ends), and
// marks their keys and streams busy. It drops members whose requests ended.
// Called with mu held.
func (b *batcher) take() []*member {
	var batch []*member
	if b.busyKeys == nil {
		b.busyKeys, b.busyStreams = make(map[InboxKey]*member), make(map[string]bool)
	}
	keys, streams := b.busyKeys, b.busyStreams
	rest := b.queue[:0]
	for _, m := range b.queue {
		if m.ctx.Err() != nil {
			continue // its caller answered already
		}
		k := InboxKey{m.ev.Provider, m.ev.DedupKey}
		stream := m.stream
		if b.twin(m) {
			continue // answered with its first arrival
		}
		if len(batch) >= b.opts.Size || keys[k] != nil || (stream != "" && streams[stream]) {
			rest = append(rest, m)
			continue
		}
		keys[k] = m
		if stream != "" {
			streams[stream] = true
		}
		batch = append(batch, m)
	}
	for _, m := range batch {
		m.gated = len(m.twins)
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	return batch
}

// run records one batch and answers its members. It returns how each was
// answered after the unit: alone for those sent to the single path (before
// or after the commit).
func (b *batcher) run(batch []*member) []outcome {
	// A batch of one runs here too, not by the single path: it costs the
	// same round trips, and while it is in flight the next arrivals queue
	// and form the next batch (run straight away, a lone delivery would
	// leave nothing in flight to gather behind).
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.Timeout)
	defer cancel()
	answers := make([]outcome, len(batch))
	sent := make([]bool, len(batch)) // answered before the commit
	// The unit takes the kept folds of its streams (sharedSet.kept): they
	// are kept again, with its decisions, once it committed. Without this
	// a delivery on a long stream (a report's payout lines) through this
	// path dropped the stream's fold, and the next set re-read and
	// re-folded the whole stream (issue 24 item 7).
	uctx, pending := withPending(ctx)
	err := b.journal.DoBatch(ctx, func(tx BatchTx) (err error) {
		// This goroutine serves no request, so nothing above it recovers:
		// a panic (a decider's bug) rolls the unit back, and each delivery
		// meets it again alone, in its own request, which answers 503.
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("shared unit: panic: %v", v)
			}
		}()
		return b.unit(uctx, tx, batch, answers, sent)
	})
	if err == nil {
		b.s.folds.keepAll(pending)
	}
	if err != nil {
		// The unit rolled back as a whole: nothing of it was kept.
		for i, m := range batch {
			answers[i] = outcome{alone: true}
			if !sent[i] {
				m.done <- answers[i]
			}
		}
		return answers
	}
	if b.opts.AfterCommit != nil {
		recorded := 0
		for i := range batch {
			if !sent[i] && !answers[i].alone {
				recorded++
			}
		}
		if recorded > 0 {
			b.opts.AfterCommit(recorded)
		}
	}
	for i, m := range batch {
		if sent[i] {
			answers[i] = outcome{alone: true}
			continue
		}
		m.done <- answers[i]
	}
	return answers
}

// unit records batch as one shared unit (sharedUnit). Redeliveries the gate
// sends alone get their answer at once and are marked in sent; the others
// are answered by run after the commit.
func (b *batcher) unit(ctx context.Context, tx BatchTx, batch []*member, answers []outcome, sent []bool) error {
	evs := make([]delivery.Event, len(batch))
	facts, twins := make([]string, len(batch)), make([]int, len(batch))
	for i, m := range batch {
		evs[i], facts[i], twins[i] = m.ev, m.facts, m.gated
	}
	res, alone, err := b.s.sharedUnit(ctx, tx, unitMembers{evs: evs, facts: facts, twins: twins}, "shared", func(i int) {
		batch[i].done <- outcome{alone: true}
		sent[i] = true
	})
	if err != nil {
		return err
	}
	for i := range batch {
		answers[i] = outcome{res: res[i]}
	}
	for _, i := range alone {
		answers[i] = outcome{alone: true}
	}
	return nil
}
