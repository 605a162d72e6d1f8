package postgres

import (
	"context"
	"slices"
	"sync"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// feedTail shares what this process read last of the feed among its
// readers. Every projector reads the same feed: after an append's wake-up
// the four of them each ran the same query (the horizon, the same rows
// sent four times, each jsonb column turned into text four times), the
// largest statement of the database's time per delivery after the inbox
// insert (docs/benchmarks/history/, the 2026-12-01 ingestcost run). Now
// concurrent reads after one position share one query, and a read that
// starts inside the tail is answered from it, the database asked only for
// what follows. The tail is a few runs (feedRun), not one: readers that
// drift apart each continue their own, and share it with whoever reads
// near them.
//
// Why an answer from the tail is the feed: the tail is a run of
// consecutive feed events, each run read by one query after its first
// position, and runs joined only end to start. Events below the horizon
// are final (no transaction can add one in front of them: see
// EventStore), so a run stays the feed's events after its start, in order,
// for good; "the tail after p, then the database after the tail's end" is
// what a reader gets from two reads one after the other. Nothing is ever
// cached past what a query returned, so a reader never sees an event its
// own query could not have shown.
//
// Events are never updated or deleted through this store; a test that
// rewrites the table under a running reader must not expect it to see the
// rewrite (none does).
type feedTail struct {
	mu sync.Mutex
	// runs are the runs kept, each its own tail: the projectors do not
	// read at one pace (the ledger's falls behind the others under a
	// settlement import), and with one tail whoever fell more than its
	// length behind read every event alone, its answers thrown away
	// (10.2 feed rows per event in a 50,000-line import, issue 40). A
	// reader continues the run it is in; one in none starts its own, the
	// least recently used going when there are too many.
	runs     []*feedRun
	clock    uint64 // counts uses, for feedRun.used
	inflight map[feedKey]*feedCall
}

// feedRun is one run of consecutive feed events.
type feedRun struct {
	after eventstore.Position // the run holds the feed's events strictly after this
	evs   []eventstore.RecordedEvent
	used  uint64
}

type feedKey struct {
	after eventstore.Position
	limit int
}

type feedCall struct {
	done chan struct{}
	evs  []eventstore.RecordedEvent
	err  error
}

// feedTailMax bounds the events of a run; past it the oldest half goes.
// feedRuns bounds the runs: one per projection, as the projectors are
// four and the outbound feed's readers follow the head.
// feedChunk is the least a query after a run's end asks for: the batch
// of a projector behind (projections: liveBatchSize·behindFactor).
const (
	feedTailMax = 4096
	feedRuns    = 4
	feedChunk   = 2000
)

// cached returns the run's events strictly after p, at most limit, and
// whether p is inside the run (its start or one of its events).
func (r *feedRun) cached(p eventstore.Position, limit int) ([]eventstore.RecordedEvent, bool) {
	if len(r.evs) == 0 {
		return nil, false
	}
	if p == r.after {
		return r.evs[:min(limit, len(r.evs))], true
	}
	i, found := slices.BinarySearchFunc(r.evs, p, func(e eventstore.RecordedEvent, p eventstore.Position) int {
		return comparePosition(e.Position, p)
	})
	if !found {
		return nil, false
	}
	rest := r.evs[i+1:]
	return rest[:min(limit, len(rest))], true
}

// end is the position the run ends at (its last event, or its start).
func (r *feedRun) end() eventstore.Position {
	if len(r.evs) == 0 {
		return r.after
	}
	return r.evs[len(r.evs)-1].Position
}

// cached returns the events after p of the run holding the most of them,
// at most limit, and that run (nil: p is in none).
func (t *feedTail) cached(p eventstore.Position, limit int) ([]eventstore.RecordedEvent, *feedRun) {
	var best []eventstore.RecordedEvent
	var in *feedRun
	for _, r := range t.runs {
		if evs, ok := r.cached(p, limit); ok && (in == nil || len(evs) > len(best)) {
			best, in = evs, r
		}
	}
	if in != nil {
		t.clock++
		in.used = t.clock
	}
	return best, in
}

// keep records evs, the feed's events strictly after from (one query's
// answer): appended to the run they continue, else kept as a run of their
// own in place of the least recently used one when there are feedRuns.
func (t *feedTail) keep(from eventstore.Position, evs []eventstore.RecordedEvent) {
	if len(evs) == 0 {
		return
	}
	t.clock++
	var r *feedRun
	for _, c := range t.runs {
		if c.end() == from {
			r = c
			break
		}
	}
	switch {
	case r != nil:
		r.evs = append(r.evs, evs...)
	case len(t.runs) < feedRuns:
		r = &feedRun{after: from, evs: slices.Clone(evs)}
		t.runs = append(t.runs, r)
	default:
		r = slices.MinFunc(t.runs, func(a, b *feedRun) int { return cmpUint(a.used, b.used) })
		r.after, r.evs = from, slices.Clone(evs)
	}
	r.used = t.clock
	if len(r.evs) > feedTailMax {
		drop := len(r.evs) - feedTailMax/2
		r.after = r.evs[drop-1].Position
		r.evs = slices.Clone(r.evs[drop:])
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// read answers ReadAll through the runs; query reads the database.
func (t *feedTail) read(ctx context.Context, after eventstore.Position, limit int,
	query func(context.Context, eventstore.Position, int) ([]eventstore.RecordedEvent, error)) ([]eventstore.RecordedEvent, error) {
	t.mu.Lock()
	head, in := t.cached(after, limit)
	if len(head) == limit {
		out := slices.Clone(head)
		t.mu.Unlock()
		return out, nil
	}
	// Inside a run the database is asked for feedChunk events after the
	// run's end (or the reader's limit, if larger), whatever the reader
	// lacks: readers at several places of one run, with batches of several
	// sizes (a projector behind takes bigger ones), then ask the same
	// question and share it; what one of them does not take waits in the
	// run for the next.
	from, ask := after, limit
	if in != nil {
		from, ask = in.end(), max(limit, feedChunk)
	}
	head = slices.Clone(head) // the run may move once unlocked
	k := feedKey{after: from, limit: ask}
	c, joined := t.inflight[k]
	if !joined {
		c = &feedCall{done: make(chan struct{})}
		if t.inflight == nil {
			t.inflight = make(map[feedKey]*feedCall)
		}
		t.inflight[k] = c
	}
	t.mu.Unlock()

	want := limit - len(head)
	if joined {
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, wrap("read all", ctx.Err())
		}
		if c.err != nil {
			// The leader's failure may be its own (its context): read alone.
			evs, err := query(ctx, from, want)
			if err != nil {
				return nil, err
			}
			return append(head, evs...), nil
		}
		return append(head, c.evs[:min(want, len(c.evs))]...), nil
	}
	c.evs, c.err = query(ctx, from, ask)
	t.mu.Lock()
	delete(t.inflight, k)
	if c.err == nil {
		t.keep(from, c.evs)
	}
	t.mu.Unlock()
	close(c.done)
	if c.err != nil {
		return nil, c.err
	}
	// c.evs is shared with the joiners and the runs: every reader gets its
	// own slice of the events.
	return append(head, c.evs[:min(want, len(c.evs))]...), nil
}

// comparePosition orders feed positions: by commit (the transaction), then
// prepare (the event's global position).
func comparePosition(a, b eventstore.Position) int {
	switch {
	case a.Commit < b.Commit:
		return -1
	case a.Commit > b.Commit:
		return 1
	case a.Prepare < b.Prepare:
		return -1
	case a.Prepare > b.Prepare:
		return 1
	}
	return 0
}
