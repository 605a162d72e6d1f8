package projections

import (
	"context"
	"errors"
	"math"
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
	// periods, in a checksum pass: the entries per period, for the
	// closes (the booker's goroutine only).
	periods *periodTotals
	// sums, in a checksum pass: each connection's share of the entries'
	// checksums, instead of a load (merged by stop).
	sums []EntrySums
}

// startEntryCopier starts the loaders; with sums set (a checksum pass)
// they hash the entries into it instead of loading them.
func startEntryCopier(ctx context.Context, db ShadowDB, totals *entryTotals, sums TableSums, periods *periodTotals) *entryCopier {
	c := &entryCopier{jobs: make(chan []LedgerEntry, entryCopiers), totals: totals, periods: periods}
	for range entryCopiers {
		load := func(entries []LedgerEntry) error { return copyEntries(ctx, db, entries) }
		if sums != nil {
			es := db.(ChecksumDB).NewEntrySums()
			c.sums = append(c.sums, es)
			load = es.Add
		}
		c.wg.Go(func() {
			for entries := range c.jobs {
				if c.failed() == nil {
					c.fail(load(entries))
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
	c.periods.add(entries)
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

// stop waits for the loads and ends the connections' goroutines; in a
// checksum pass it adds their checksums into sums.
func (c *entryCopier) stop(sums TableSums) error {
	close(c.jobs)
	c.wg.Wait()
	for _, s := range c.sums {
		sums.Merge(s.Sums())
	}
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
		if !addChecked(&b.Balance, e.Amount) {
			t.overflow = true
		}
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
	if w.c.periods != nil {
		// A checksum pass stores no entries: their sums are in memory.
		return w.c.periods.periodSums(p)
	}
	if err := w.c.wait(); err != nil {
		return nil, err
	}
	return w.Batch.PeriodSums(ctx, p)
}

func (w copyingWriter) FreezePeriod(ctx context.Context, c PeriodClose) error {
	w.c.periods.freeze(c)
	return w.Batch.FreezePeriod(ctx, c)
}

func (w copyingWriter) ReopenPeriod(ctx context.Context, r PeriodReopen) error {
	w.c.periods.reopen(r)
	return w.Batch.ReopenPeriod(ctx, r)
}

// errChecksumPassUnfit: a sum left int64 in a checksum pass, which cannot
// tell what the database would do with it (it adds up in numeric): the
// rebuild replays into the shadow tables instead.
var errChecksumPassUnfit = errors.New("the entries' sums leave int64: the checksum pass cannot stand for the load")

// periodTotals adds up a checksum pass's entries per period, account and
// currency, and keeps the frozen balances of the closed periods, so that
// a period close gets the sums the database would add up from the stored
// entries (readmodel periodSums): the opening is the previous period's
// frozen closing if it has one, else the sum of every entry booked before
// the period; the debits and credits are the period's positive and
// negative amounts.
type periodTotals struct {
	sums     map[periodKey]*periodSum
	frozen   map[period.Period][]period.Balance
	overflow bool
}

type periodKey struct {
	p        period.Period
	account  string
	currency money.Currency
}

type periodSum struct{ net, debits, negatives int64 }

func newPeriodTotals() *periodTotals {
	return &periodTotals{sums: map[periodKey]*periodSum{}, frozen: map[period.Period][]period.Balance{}}
}

// addChecked adds b to *a (money.Add), and reports whether it stayed in
// int64; *a is left as it was when it did not.
func addChecked(a *int64, b int64) bool {
	s, err := money.Add(*a, b)
	if err != nil {
		return false
	}
	*a = s
	return true
}

func (t *periodTotals) add(entries []LedgerEntry) {
	if t == nil {
		return
	}
	for _, e := range entries {
		k := periodKey{e.Period, e.Account, e.Currency}
		s := t.sums[k]
		if s == nil {
			s = &periodSum{}
			t.sums[k] = s
		}
		ok := addChecked(&s.net, e.Amount)
		switch {
		case e.Amount > 0:
			ok = addChecked(&s.debits, e.Amount) && ok
		case e.Amount < 0:
			ok = addChecked(&s.negatives, e.Amount) && ok
		}
		if !ok {
			t.overflow = true
		}
	}
}

func (t *periodTotals) freeze(c PeriodClose) {
	if t != nil {
		t.frozen[c.Period] = c.Lines
	}
}

func (t *periodTotals) reopen(r PeriodReopen) {
	if t != nil {
		delete(t.frozen, r.Period)
	}
}

// periodSums is p's figures, as readmodel periodSums adds them up.
func (t *periodTotals) periodSums(p period.Period) ([]period.Sum, error) {
	if t.overflow {
		return nil, errChecksumPassUnfit
	}
	type acctCur struct {
		account  string
		currency money.Currency
	}
	out := map[acctCur]*period.Sum{}
	get := func(k acctCur) *period.Sum {
		s := out[k]
		if s == nil {
			s = &period.Sum{Account: k.account, Currency: k.currency}
			out[k] = s
		}
		return s
	}
	lines, prevFrozen := t.frozen[p.Prev()]
	for _, l := range lines {
		get(acctCur{l.Account, l.Currency}).Opening = l.Closing
	}
	for k, s := range t.sums {
		switch c := k.p.Compare(p); {
		case c < 0 && !prevFrozen:
			if !addChecked(&get(acctCur{k.account, k.currency}).Opening, s.net) {
				return nil, errChecksumPassUnfit
			}
		case c == 0:
			if s.negatives == math.MinInt64 {
				return nil, errChecksumPassUnfit
			}
			x := get(acctCur{k.account, k.currency})
			x.Debits, x.Credits = s.debits, -s.negatives
		}
	}
	res := make([]period.Sum, 0, len(out))
	for _, s := range out {
		res = append(res, *s)
	}
	return res, nil
}
