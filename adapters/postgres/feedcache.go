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
// what follows.
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
	mu       sync.Mutex
	after    eventstore.Position // the tail holds the feed's events strictly after this
	evs      []eventstore.RecordedEvent
	inflight map[feedKey]*feedCall
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

// feedTailMax bounds the events kept; past it the oldest half goes.
const feedTailMax = 4096

// cached returns the tail's events strictly after p, at most limit, and
// whether p is inside the tail (its start or one of its events).
func (t *feedTail) cached(p eventstore.Position, limit int) ([]eventstore.RecordedEvent, bool) {
	if len(t.evs) == 0 {
		return nil, false
	}
	if p == t.after {
		return t.evs[:min(limit, len(t.evs))], true
	}
	i, found := slices.BinarySearchFunc(t.evs, p, func(e eventstore.RecordedEvent, p eventstore.Position) int {
		return comparePosition(e.Position, p)
	})
	if !found {
		return nil, false
	}
	rest := t.evs[i+1:]
	return rest[:min(limit, len(rest))], true
}

// end is the position the tail ends at (its last event, or its start).
func (t *feedTail) end() eventstore.Position {
	if len(t.evs) == 0 {
		return t.after
	}
	return t.evs[len(t.evs)-1].Position
}

// keep records evs, the feed's events strictly after from (one query's
// answer): appended when they continue the tail, in place of it when they
// are a newer run, dropped when they are older.
func (t *feedTail) keep(from eventstore.Position, evs []eventstore.RecordedEvent) {
	if len(evs) == 0 {
		return
	}
	switch {
	case len(t.evs) > 0 && from == t.end():
		t.evs = append(t.evs, evs...)
	case len(t.evs) == 0 || comparePosition(from, t.end()) > 0:
		t.after, t.evs = from, slices.Clone(evs)
	default:
		return
	}
	if len(t.evs) > feedTailMax {
		drop := len(t.evs) - feedTailMax/2
		t.after = t.evs[drop-1].Position
		t.evs = slices.Clone(t.evs[drop:])
	}
}

// read answers ReadAll through the tail; query reads the database.
func (t *feedTail) read(ctx context.Context, after eventstore.Position, limit int,
	query func(context.Context, eventstore.Position, int) ([]eventstore.RecordedEvent, error)) ([]eventstore.RecordedEvent, error) {
	t.mu.Lock()
	head, inside := t.cached(after, limit)
	if len(head) == limit {
		out := slices.Clone(head)
		t.mu.Unlock()
		return out, nil
	}
	from, want := after, limit
	if inside {
		from, want = t.end(), limit-len(head)
	}
	head = slices.Clone(head) // the tail may move once unlocked
	k := feedKey{after: from, limit: want}
	c, joined := t.inflight[k]
	if !joined {
		c = &feedCall{done: make(chan struct{})}
		if t.inflight == nil {
			t.inflight = make(map[feedKey]*feedCall)
		}
		t.inflight[k] = c
	}
	t.mu.Unlock()

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
		return append(head, c.evs...), nil
	}
	c.evs, c.err = query(ctx, from, want)
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
	// c.evs is shared with the joiners and the tail: every reader gets its
	// own slice of the events.
	return append(head, c.evs...), nil
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
