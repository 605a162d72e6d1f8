package projections

import (
	"context"
	"sync"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
)

// entryCopiers is how many connections load a rebuild's ledger entries at
// once.
const entryCopiers = 2

// entryCopier loads the ledger lane's entries on connections of their
// own, side by side, while the lane goes on booking the next ones. The
// ledger itself stays sequential (booking follows the calendar in feed
// order); only the writing of booked entries, which commutes, is spread.
// Whatever reads the entries back (a period close adds them up) waits for
// every pending load first: the barrier that keeps a close exact.
type entryCopier struct {
	jobs chan []LedgerEntry
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	// pending counts the loads submitted and not committed yet.
	pending sync.WaitGroup
	// totals adds up the submitted entries (the booker's goroutine only).
	totals *entryTotals
}

func startEntryCopier(ctx context.Context, db ShadowDB, totals *entryTotals) *entryCopier {
	c := &entryCopier{jobs: make(chan []LedgerEntry, entryCopiers), totals: totals}
	for range entryCopiers {
		c.wg.Go(func() {
			for entries := range c.jobs {
				if c.failed() == nil {
					c.fail(copyEntries(ctx, db, entries))
				}
				c.pending.Done()
			}
		})
	}
	return c
}

func copyEntries(ctx context.Context, db ShadowDB, entries []LedgerEntry) (err error) {
	b, err := db.BeginShadow(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = b.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := b.InsertLedgerEntries(ctx, entries); err != nil {
		return err
	}
	return b.Commit(ctx, eventstore.Position{})
}

func (c *entryCopier) fail(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

func (c *entryCopier) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// submit queues entries, split across the connections.
func (c *entryCopier) submit(ctx context.Context, entries []LedgerEntry) error {
	if err := c.failed(); err != nil {
		return err
	}
	c.totals.add(entries)
	// The booker reuses its slice: the loads get their own.
	entries = append([]LedgerEntry(nil), entries...)
	per := (len(entries) + entryCopiers - 1) / entryCopiers
	for len(entries) > 0 {
		n := min(per, len(entries))
		c.pending.Add(1)
		select {
		case c.jobs <- entries[:n]:
		case <-ctx.Done():
			c.pending.Done()
			return ctx.Err()
		}
		entries = entries[n:]
	}
	return nil
}

// wait returns once every submitted load is committed (or one failed).
func (c *entryCopier) wait() error {
	c.pending.Wait()
	return c.failed()
}

// stop waits for the loads and ends the connections' goroutines.
func (c *entryCopier) stop() error {
	close(c.jobs)
	c.wg.Wait()
	return c.failed()
}

// entryTotals adds up the entries a rebuild loads, per account and
// currency: the shadow balances, without a scan of the loaded entries
// (FinishBulk). Every loaded entry goes through it: the ledger lane's
// entries all go to its copier.
type entryTotals struct {
	sums map[balanceKey]*BalanceTotal
	// overflow: a sum left int64 on the way (the database, which adds up
	// in numeric, is left to add them up, or to refuse).
	overflow bool
}

type balanceKey struct {
	account  string
	currency money.Currency
}

func newEntryTotals() *entryTotals { return &entryTotals{sums: map[balanceKey]*BalanceTotal{}} }

func (t *entryTotals) add(entries []LedgerEntry) {
	if t == nil {
		return
	}
	for _, e := range entries {
		k := balanceKey{e.Account, e.Currency}
		b := t.sums[k]
		if b == nil {
			b = &BalanceTotal{Account: e.Account, Currency: e.Currency}
			t.sums[k] = b
		}
		sum := b.Balance + e.Amount
		if (e.Amount > 0 && sum < b.Balance) || (e.Amount < 0 && sum > b.Balance) {
			t.overflow = true
		}
		b.Balance = sum
		b.Entries++
	}
}

// balances returns the totals, or nil if they cannot be trusted (an
// overflow): then FinishBulk adds up the loaded entries itself.
func (t *entryTotals) balances() []BalanceTotal {
	if t == nil || t.overflow {
		return nil
	}
	out := make([]BalanceTotal, 0, len(t.sums))
	for _, b := range t.sums {
		out = append(out, *b)
	}
	return out
}

// copyingWriter is the ledger lane's Writer: entries go to the copier,
// and the reads of stored entries wait for it.
type copyingWriter struct {
	Batch
	c *entryCopier
}

func (w copyingWriter) InsertLedgerEntries(ctx context.Context, entries []LedgerEntry) error {
	return w.c.submit(ctx, entries)
}

func (w copyingWriter) OpenPeriodsBefore(ctx context.Context, p period.Period) ([]period.Period, error) {
	if err := w.c.wait(); err != nil {
		return nil, err
	}
	return w.Batch.OpenPeriodsBefore(ctx, p)
}

func (w copyingWriter) PeriodSums(ctx context.Context, p period.Period) ([]period.Sum, error) {
	if err := w.c.wait(); err != nil {
		return nil, err
	}
	return w.Batch.PeriodSums(ctx, p)
}
