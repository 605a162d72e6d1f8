package operations

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// Balances records what is stated about the provider and bank accounts
// (docs/reference.md, "Provider balances"): balance assertions from files,
// APIs and people, opening balances, and the adjustments that resolve
// items. Each is decided by domain/assertion on the stream of its account
// and currency (an adjustment: on its item's stream) and appended by the
// ledger's write protocol (adapters/command), at the version decided on.
//
// Importers (settlement files, bank statements, settle sync) call State;
// they declare the port they need, e.g.
//
//	type Asserter interface {
//		State(ctx context.Context, s assertion.Statement) (int, error)
//	}
type Balances struct {
	store   EventStore
	periods *Periods
	items   ItemLookup
	now     func() time.Time
}

// ItemLookup finds a reconciliation item by the id GET /v1/reconciliation
// lists, and the as_of of the assertion it is about (zero when it is not
// about one): an adjustment's default effective time.
type ItemLookup interface {
	ItemAbout(ctx context.Context, itemID string) (asOf time.Time, found bool, err error)
}

// ErrItemUnknown: an adjustment names no item the ledger lists.
var ErrItemUnknown = errors.New("no such reconciliation item")

// ErrClosedPeriod: an opening balance dated in a closed period (it would
// change that period's frozen figures).
var ErrClosedPeriod = errors.New("the period is closed")

// NewBalances returns the commands over store; periods tells closed
// periods (opening balances), items finds the items adjustments resolve;
// now is the clock (nil: time.Now).
func NewBalances(store EventStore, periods *Periods, items ItemLookup, now func() time.Time) *Balances {
	if now == nil {
		now = time.Now
	}
	return &Balances{store: store, periods: periods, items: items, now: now}
}

// pointsPerEvent bounds one balance.asserted event: a bill of 100,000
// lines states its balances in a few dozen events, not one huge one.
const pointsPerEvent = 2000

// State records the balances s states, those not recorded before (a file
// imported again states nothing new), and returns how many it recorded.
// Errors wrap assertion.ErrInvalid (with an *assertion.FieldError naming
// the field), assertion.ErrConflict or ErrContention.
func (b *Balances) State(ctx context.Context, s assertion.Statement) (int, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	// One stream per UTC day of the points (assertion.StatementStream):
	// recording reads only the days the statement states.
	var days []string
	byDay := map[string][]assertion.Point{}
	for _, p := range s.Points {
		d := p.AsOf.UTC().Format(time.DateOnly)
		if _, ok := byDay[d]; !ok {
			days = append(days, d)
		}
		byDay[d] = append(byDay[d], p)
	}
	total := 0
	for _, d := range days {
		day := s
		day.Points = byDay[d]
		n, err := b.stateDay(ctx, assertion.StatementStream(s.Account, s.Currency, day.Points[0].AsOf), day)
		total += n
		if err != nil {
			return total, fmt.Errorf("state %s %s: %w", s.Account, s.Currency, err)
		}
	}
	return total, nil
}

// stateDay records one day's points on their stream, in events of at most
// pointsPerEvent points.
func (b *Balances) stateDay(ctx context.Context, stream string, s assertion.Statement) (int, error) {
	var recorded int
	_, err := b.act(ctx, stream, func(st assertion.State) ([]assertion.Event, error) {
		recorded = 0
		var out []assertion.Event
		for i := 0; i < len(s.Points); i += pointsPerEvent {
			chunk := s
			chunk.Points = s.Points[i:min(i+pointsPerEvent, len(s.Points))]
			evs, err := assertion.DecideStatement(st, chunk, b.now())
			if err != nil {
				return nil, err
			}
			for _, e := range evs {
				st.Apply(e)
				recorded += len(e.(assertion.Stated).Points)
			}
			out = append(out, evs...)
		}
		return out, nil
	})
	return recorded, err
}

// Open records an opening balance (c.ID: a fresh one when nil). An
// opening balance dated in a closed period is refused (ErrClosedPeriod,
// with an *assertion.FieldError for as_of).
func (b *Balances) Open(ctx context.Context, c assertion.Opening) (assertion.Opened, error) {
	if c.ID == uuid.Nil {
		c.ID = uuid.New()
	}
	if b.periods != nil && !c.AsOf.IsZero() {
		cal, err := b.periods.Calendar(ctx)
		if err != nil {
			return assertion.Opened{}, err
		}
		if p := period.Of(c.AsOf, b.periods.zone); cal.IsClosed(p) {
			return assertion.Opened{}, fmt.Errorf("%w: %w", ErrClosedPeriod,
				&assertion.FieldError{Field: "as_of", Reason: "lies in the closed period " + p.String()})
		}
	}
	evs, err := b.act(ctx, assertion.StreamID(c.Account, c.Currency), func(st assertion.State) ([]assertion.Event, error) {
		return assertion.DecideOpening(st, c, b.now())
	})
	if err != nil {
		return assertion.Opened{}, fmt.Errorf("opening balance of %s %s: %w", c.Account, c.Currency, err)
	}
	return evs[0].(assertion.Opened), nil
}

// Adjust records an adjustment resolving the item c.ItemID (c.ID: a fresh
// one when nil; c.EffectiveAt: when zero, the as_of of the assertion the
// item is about, else now). Errors wrap ErrItemUnknown,
// assertion.ErrInvalid, assertion.ErrConflict or ErrContention.
func (b *Balances) Adjust(ctx context.Context, c assertion.Adjustment) (assertion.Adjusted, error) {
	if c.ID == uuid.Nil {
		c.ID = uuid.New()
	}
	stream, _, _, err := views.ParseReconciliationID(c.ItemID)
	if err != nil {
		return assertion.Adjusted{}, fmt.Errorf("%w: %w", ErrItemUnknown, &assertion.FieldError{Field: "item_id", Reason: err.Error()})
	}
	asOf, found, err := b.items.ItemAbout(ctx, c.ItemID)
	if err != nil {
		return assertion.Adjusted{}, err
	}
	if !found {
		return assertion.Adjusted{}, fmt.Errorf("%w: %w", ErrItemUnknown, &assertion.FieldError{Field: "item_id", Reason: c.ItemID + " is not an item GET /v1/reconciliation lists"})
	}
	if c.EffectiveAt.IsZero() {
		c.EffectiveAt = asOf
		if asOf.IsZero() {
			c.EffectiveAt = b.now()
		}
	}
	evs, err := b.act(ctx, assertion.AdjustmentStream(stream), func(st assertion.State) ([]assertion.Event, error) {
		return assertion.DecideAdjustment(st, c, b.now())
	})
	if err != nil {
		return assertion.Adjusted{}, fmt.Errorf("adjustment of %s: %w", c.ItemID, err)
	}
	return evs[0].(assertion.Adjusted), nil
}

// ItemAction resolves or reopens the balance_mismatch item of an
// assertion stream with a note (Reconciliation routes such items here).
func (b *Balances) ItemAction(ctx context.Context, stream string, c assertion.ItemAction) (assertion.Event, error) {
	evs, err := b.act(ctx, stream, func(st assertion.State) ([]assertion.Event, error) {
		return assertion.DecideItemAction(st, c, b.now())
	})
	if err != nil {
		return nil, err
	}
	return evs[0], nil
}

// act runs a decision on the folded state of an assertion stream by the
// write protocol (command.Act): appended at the version decided on,
// decided again after a lost race. Opening balances and adjustments are
// stored under their own id (the journal's event id is the adjustment's
// id); the others get fresh ids, as every operator's action (act.go).
func (b *Balances) act(ctx context.Context, stream string, decide func(assertion.State) ([]assertion.Event, error)) ([]assertion.Event, error) {
	var decided []assertion.Event
	_, err := command.Act(ctx, command.Versioned(b.store), stream, func(recs []eventstore.RecordedEvent) ([]eventstore.EventData, error) {
		history, err := command.Decode(recs, assertion.Decode)
		if err != nil {
			return nil, err
		}
		if decided, err = decide(assertion.Fold(history)); err != nil {
			return nil, err
		}
		data := make([]eventstore.EventData, len(decided))
		for i, e := range decided {
			typ, body, err := assertion.Encode(e)
			if err != nil {
				return nil, err
			}
			id := uuid.New()
			switch e := e.(type) {
			case assertion.Opened:
				id = e.ID
			case assertion.Adjusted:
				id = e.ID
			}
			data[i] = eventstore.EventData{ID: id, Type: typ, Data: body}
		}
		return data, nil
	}, command.Retry{Attempts: maxAttempts, GiveUp: func(_ int, err error) error {
		return fmt.Errorf("%w: %v", ErrContention, err)
	}})
	if err != nil {
		return nil, err
	}
	return decided, nil
}
