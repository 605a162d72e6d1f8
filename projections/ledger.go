package projections

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/period"
)

// PeriodWriter is the accounting-period part of the ledger projection's
// Writer: the periods and period_balances tables, in the same transaction
// as the entries.
type PeriodWriter interface {
	// Calendar returns the calendar state as the periods table stores it.
	Calendar(ctx context.Context) (period.State, error)
	// EnsurePeriods records (open) periods entries are booked into; known
	// periods are left alone.
	EnsurePeriods(ctx context.Context, ps []period.Period) error
	// OpenPeriodsBefore lists the open periods before p that have a row.
	OpenPeriodsBefore(ctx context.Context, p period.Period) ([]period.Period, error)
	// PeriodSums adds up p's figures from the entries stored so far: per
	// account and currency, the opening (everything booked before p) and
	// p's debits and credits.
	PeriodSums(ctx context.Context, p period.Period) ([]period.Sum, error)
	// FreezePeriod marks the period closed and stores its frozen trial
	// balance, replacing any earlier one.
	FreezePeriod(ctx context.Context, c PeriodClose) error
	// ReopenPeriod marks the period open and removes its frozen balance.
	ReopenPeriod(ctx context.Context, r PeriodReopen) error
}

// PeriodClose is a period closed by a period.closed event: its frozen
// trial balance and who closed it. BooksStart marks the first period ever
// closed; periods before it are frozen by the same event.
type PeriodClose struct {
	Period     period.Period
	Lines      []period.Balance
	Hash       string
	BooksStart bool
	Zone       string
	At         time.Time
	Actor      string
	Note       string
	EventID    uuid.UUID
}

// PeriodReopen is a period reopened by a period.reopened event.
type PeriodReopen struct {
	Period  period.Period
	At      time.Time
	Actor   string
	Reason  string
	EventID uuid.UUID
}

// Ledger is the journal projection: every posting of every event (payments
// and payouts) into ledger_entries, each booked into an accounting period,
// their sums into account_balances, and the calendar of the periods stream
// into periods and period_balances.
//
// Booking happens here, in feed order: the calendar events are in the same
// global feed as the payment events, so an entry sees exactly the closes
// recorded before it, live or in a rebuild. An entry whose effective
// period is closed is booked into the first open period and marked
// late_adjustment (domain/period Calendar.Book). A close freezes the
// period's trial balance, computed from the entries stored so far, with
// its content hash; a reopen thaws it.
func Ledger(opts ...Option) Projection { return ledgerProjection{zone: configure(opts).zone} }

type ledgerProjection struct {
	zone *time.Location
}

func (ledgerProjection) Name() string { return NameLedger }
func (ledgerProjection) Tables() []string {
	return []string{"ledger_entries", "account_balances", "periods", "period_balances"}
}

func (l ledgerProjection) Apply(ctx context.Context, w Writer, batch []Envelope) error {
	// About two postings per event: the entries are sized once rather
	// than grown by doubling (a bulk batch books thousands).
	b := booker{zone: l.zone, w: w, entries: make([]LedgerEntry, 0, 2*len(batch))}
	for _, env := range batch {
		if env.Period != nil {
			if err := b.calendarEvent(ctx, env); err != nil {
				return err
			}
			continue
		}
		ps, provider, occurred := postingsOf(env) // assertions.go: opening balances and adjustments post too
		if len(ps) == 0 {
			continue
		}
		// An unbalanced event would make every balance after it wrong;
		// stopping here is the only honest option.
		if err := ledger.Check(ps); err != nil {
			return poison("event %s: %w", env.Recorded.ID, err)
		}
		if err := b.load(ctx); err != nil {
			return err
		}
		if occurred.IsZero() {
			occurred = env.Recorded.RecordedAt
		}
		eff := period.Of(occurred, l.zone)
		booked, late := b.cal.Book(eff)
		var adjusts period.Period
		if late {
			adjusts = eff
		}
		for i, p := range ps {
			b.entries = append(b.entries, LedgerEntry{
				EventID:      env.Recorded.ID,
				PostingIndex: i,
				StreamID:     env.Recorded.StreamID,
				EventType:    env.Recorded.Type,
				Provider:     provider,
				Account:      p.Account,
				Currency:     p.Currency,
				Amount:       p.Amount,
				OccurredAt:   occurred,
				RecordedAt:   env.Recorded.RecordedAt,
				Position:     env.Recorded.Position,
				Period:       booked,
				Late:         late,
				Adjusts:      adjusts,
			})
		}
	}
	return b.flush(ctx)
}

// booker carries the calendar and the pending entries through one batch.
type booker struct {
	zone    *time.Location
	w       Writer
	cal     *period.Calendar // loaded on first need
	entries []LedgerEntry
}

// load reads the calendar state once per batch. Books closed in another
// zone than the configured one would book new entries by other month
// boundaries than their closed periods: the projection stops instead.
func (b *booker) load(ctx context.Context) error {
	if b.cal != nil {
		return nil
	}
	st, err := b.w.Calendar(ctx)
	if err != nil {
		return err
	}
	if st.Zone != "" && st.Zone != b.zone.String() {
		return poison("%w: the books were closed in %s, ONCELEDGER_REPORTING_TZ is %s", period.ErrZoneMismatch, st.Zone, b.zone)
	}
	c := period.Resume(st)
	b.cal = &c
	return nil
}

// flush writes the pending entries (and their periods), so that a close
// that follows them in the feed freezes them.
func (b *booker) flush(ctx context.Context) error {
	if len(b.entries) == 0 {
		return nil
	}
	var ps []period.Period
	for _, e := range b.entries {
		if !slices.Contains(ps, e.Period) {
			ps = append(ps, e.Period)
		}
	}
	slices.SortFunc(ps, period.Period.Compare)
	if err := b.w.EnsurePeriods(ctx, ps); err != nil {
		return err
	}
	if err := b.w.InsertLedgerEntries(ctx, b.entries); err != nil {
		return err
	}
	b.entries = b.entries[:0]
	return nil
}

func (b *booker) calendarEvent(ctx context.Context, env Envelope) error {
	if err := b.load(ctx); err != nil {
		return err
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	first := b.cal.Start().IsZero()
	if c, ok := env.Period.(period.Closed); ok && c.Zone != b.zone.String() {
		return poison("event %s: %w: %s was closed in %s, ONCELEDGER_REPORTING_TZ is %s",
			env.Recorded.ID, period.ErrZoneMismatch, c.Period, c.Zone, b.zone)
	}
	if err := b.cal.Apply(env.Period); err != nil {
		return poison("event %s: %w", env.Recorded.ID, err)
	}
	switch e := env.Period.(type) {
	case period.Closed:
		// The first close starts the books: the periods before it close
		// with it, each with its own frozen trial balance.
		var ps []period.Period
		if first {
			var err error
			if ps, err = b.w.OpenPeriodsBefore(ctx, e.Period); err != nil {
				return err
			}
		}
		for _, p := range append(ps, e.Period) {
			sums, err := b.w.PeriodSums(ctx, p)
			if err != nil {
				return err
			}
			lines, err := period.Lines(sums)
			if err != nil {
				return poison("event %s: freeze %s: %w", env.Recorded.ID, p, err)
			}
			if err := b.w.FreezePeriod(ctx, PeriodClose{
				Period: p, Lines: lines, Hash: period.Hash(p, lines), BooksStart: first && p == e.Period,
				Zone: e.Zone, At: e.At, Actor: e.Actor, Note: e.Note, EventID: env.Recorded.ID,
			}); err != nil {
				return err
			}
		}
	case period.Reopened:
		return b.w.ReopenPeriod(ctx, PeriodReopen{Period: e.Period, At: e.At, Actor: e.Actor, Reason: e.Reason, EventID: env.Recorded.ID})
	default:
		return poison("event %s: unknown calendar event %T", env.Recorded.ID, e)
	}
	return nil
}
