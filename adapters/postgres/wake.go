package postgres

import (
	"context"
	"sync"
	"time"
)

// wakeSQL is the readers' wake-up, sent after a group-committed unit's
// commit in a transaction of its own that does not wait for its WAL flush.
//
// Why not pg_notify inside the unit, as single appends do: Postgres takes a
// database-wide lock for NOTIFY at pre-commit and holds it to the end of the
// transaction, through its commit's WAL flush (async.c, PreCommit_Notify:
// the lock serializes the notification queue's order with commit order).
// Every unit that notified therefore committed one after the other, each
// waiting for its own flush: the units could not share a flush, which is
// what Postgres's group commit does for transactions that commit at once.
// On session 11's VM the sampled wait events of the ingest's backends were
// Lock:object 10–12 % beside WALSync 14–21 % (docs/benchmarks.md, "Where the
// machine's time goes"). The wake-up is a hint (readers read from their
// checkpoint and poll: Changes), so it need not be atomic with the events:
// sent after the commit, it can only be later, never earlier, than them.
// Its own commit asks no flush (synchronous_commit off): the notification is
// delivered at commit whatever becomes of that commit record, which holds
// nothing. One statement in the simple protocol: one round trip.
const wakeSQL = `BEGIN; SET LOCAL synchronous_commit TO off; SELECT pg_notify('` + NotifyChannel + `', ''); COMMIT`

// wakeTimeout bounds one wake-up: a reader that misses it polls.
const wakeTimeout = 5 * time.Second

// waker sends the wake-ups of committed units, coalesced: while one is being
// sent, every unit that commits asks for one more, sent after it (after
// their commits), so a burst of units costs two wake-ups, not one each.
type waker struct {
	mu      sync.Mutex
	running bool
	pending bool
}

// wakeReaders wakes the feed's readers after events committed (without
// waiting for the wake-up).
func (s *EventStore) wakeReaders() {
	w := &s.waker
	w.mu.Lock()
	if w.running {
		w.pending = true
		w.mu.Unlock()
		return
	}
	w.running = true
	w.mu.Unlock()
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), wakeTimeout)
			_, _ = s.pool.Exec(ctx, wakeSQL) // a lost wake-up is a later poll
			cancel()
			w.mu.Lock()
			if !w.pending {
				w.running = false
				w.mu.Unlock()
				return
			}
			w.pending = false
			w.mu.Unlock()
		}
	}()
}
