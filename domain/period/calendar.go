package period

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// StreamID is the one stream of the calendar. It is part of the global feed:
// the ledger projection reads closes and reopens in feed order, so a rebuild
// books every entry into the same period as the live projection did.
const StreamID = "periods"

// Stable event type names. Changing one is a data migration.
const (
	TypeClosed   = "period.closed"
	TypeReopened = "period.reopened"
)

// Event is a calendar event.
type Event interface {
	Type() string
	PeriodOf() Period
}

// Closed: an operator closed Period. Zone is the reporting time zone the
// period was closed in (its IANA name): the books keep one zone.
type Closed struct {
	Period Period
	Zone   string
	Actor  string
	Note   string
	At     time.Time
}

// Reopened: an operator reopened Period, saying why.
type Reopened struct {
	Period Period
	Actor  string
	Reason string
	At     time.Time
}

func (Closed) Type() string         { return TypeClosed }
func (Reopened) Type() string       { return TypeReopened }
func (e Closed) PeriodOf() Period   { return e.Period }
func (e Reopened) PeriodOf() Period { return e.Period }

// Errors of Decide; each is wrapped with the details.
var (
	ErrAlreadyClosed     = errors.New("period is closed already")
	ErrNotClosed         = errors.New("period is not closed")
	ErrEarlierPeriodOpen = errors.New("an earlier period is still open")
	// ErrLaterPeriodClosed: the period is closed but is not the last
	// closed one (a later one is closed, or it is before the start of the
	// books, which never reopens).
	ErrLaterPeriodClosed  = errors.New("only the last closed period can be reopened")
	ErrPeriodNotEnded     = errors.New("period has not ended yet")
	ErrReasonRequired     = errors.New("a reason is required to reopen a period")
	ErrActorRequired      = errors.New("an actor is required")
	ErrZoneMismatch       = errors.New("reporting time zone differs from the one the books were closed in")
	ErrInconsistentEvents = errors.New("calendar history is inconsistent")
)

// Calendar is the aggregate of the periods stream.
//
// The rules keep the closed periods one unbroken run, so that "the first
// open period" is always well defined:
//
//   - The first close may be any month, once it has ended. It fixes the start
//     of the books: every period before it counts as closed too (those with
//     entries are frozen by the same close, each with its trial balance),
//     and a late fact for one is an adjustment like any other. The first
//     close also fixes the reporting time zone.
//   - After that, a period closes only after every earlier one: the next
//     close is always the month after the last closed one.
//   - Only the last closed period can be reopened (no later period may be
//     closed: its frozen opening balance would silently stop matching), and
//     only with a reason. Reopening the first closed period leaves the
//     months before it closed: the start of the books does not move.
//
// So the state is the start and the last closed period ("closed through").
type Calendar struct {
	start   Period // first period ever closed; zero: nothing was ever closed
	through Period // every period up to and including it is closed
	zone    string
}

// State is the calendar's state, for read models that store it and resume
// (Resume) instead of folding the stream.
type State struct {
	Start   Period // zero: the books were never closed
	Through Period // last closed period; Start.Prev() when all were reopened
	Zone    string
}

// Resume returns the calendar in state s.
func Resume(s State) Calendar { return Calendar{start: s.Start, through: s.Through, zone: s.Zone} }

// State returns the calendar's state.
func (c Calendar) State() State { return State{Start: c.start, Through: c.through, Zone: c.zone} }

// Fold replays the periods stream.
func Fold(history []Event) (Calendar, error) {
	var c Calendar
	for i, e := range history {
		if err := c.Apply(e); err != nil {
			return Calendar{}, fmt.Errorf("history event %d: %w", i, err)
		}
	}
	return c, nil
}

// Apply folds one recorded event. A recorded event that breaks the rules
// (which Decide never emits) is ErrInconsistentEvents: a projection stops
// at it rather than guess.
func (c *Calendar) Apply(e Event) error {
	switch e := e.(type) {
	case Closed:
		if err := c.canClose(e.Period); err != nil {
			return fmt.Errorf("%w: close %s: %w", ErrInconsistentEvents, e.Period, err)
		}
		if c.start.IsZero() {
			c.start, c.zone = e.Period, e.Zone
		}
		c.through = e.Period
	case Reopened:
		if err := c.canReopen(e.Period); err != nil {
			return fmt.Errorf("%w: reopen %s: %w", ErrInconsistentEvents, e.Period, err)
		}
		c.through = e.Period.Prev()
	default:
		return fmt.Errorf("%w: unknown event %T", ErrInconsistentEvents, e)
	}
	return nil
}

// Zone is the reporting time zone fixed by the first close ("" before it).
func (c Calendar) Zone() string { return c.zone }

// Start is the first period ever closed (zero if none).
func (c Calendar) Start() Period { return c.start }

// ClosedThrough is the last closed period (zero if none is closed).
func (c Calendar) ClosedThrough() Period {
	if c.start.IsZero() || c.through.Before(c.start) {
		return Period{}
	}
	return c.through
}

// IsClosed reports whether p is closed (periods before the start of the
// books count as closed once the books have started).
func (c Calendar) IsClosed(p Period) bool {
	return !c.start.IsZero() && !p.After(c.through)
}

// FirstOpen is the first open period at or after p.
func (c Calendar) FirstOpen(p Period) Period {
	if c.IsClosed(p) {
		return c.through.Next()
	}
	return p
}

// Book is the booking rule: an entry whose effective period is open is
// booked into it; one whose effective period is closed is booked into the
// first open period and is a late adjustment (its effective time is kept
// on the entry: history is not rewritten).
func (c Calendar) Book(effective Period) (booked Period, late bool) {
	if c.IsClosed(effective) {
		return c.through.Next(), true
	}
	return effective, false
}

func (c Calendar) canClose(p Period) error {
	if p.IsZero() {
		return ErrInvalidPeriod
	}
	if c.IsClosed(p) {
		return fmt.Errorf("%w: %s (closed through %s)", ErrAlreadyClosed, p, c.through)
	}
	if !c.start.IsZero() && p != c.through.Next() {
		return fmt.Errorf("%w: close %s first", ErrEarlierPeriodOpen, c.through.Next())
	}
	return nil
}

func (c Calendar) canReopen(p Period) error {
	if p.IsZero() {
		return ErrInvalidPeriod
	}
	if !c.IsClosed(p) {
		return fmt.Errorf("%w: %s", ErrNotClosed, p)
	}
	last := "none is closed now"
	if through := c.ClosedThrough(); !through.IsZero() {
		last = "the last closed period is " + through.String()
	}
	if p.Before(c.start) {
		// Closed by the first close, which fixed the start of the books:
		// the start does not move, so these months never reopen.
		return fmt.Errorf("%w: %s is before the start of the books (%s) and stays closed; %s",
			ErrLaterPeriodClosed, p, c.start, last)
	}
	if p != c.through {
		return fmt.Errorf("%w: %s is closed, but %s (reopen it first)", ErrLaterPeriodClosed, p, last)
	}
	return nil
}

// CloseCommand asks to close Period. Zone is the reporting time zone in
// force (its Location's name); Now is the clock.
type CloseCommand struct {
	Period Period
	Zone   *time.Location
	Actor  string
	Note   string
	Now    time.Time
}

// ReopenCommand asks to reopen Period with a reason.
type ReopenCommand struct {
	Period Period
	Actor  string
	Reason string
	Now    time.Time
}

// DecideClose returns the event that closes the period, or why it cannot
// close: it must have ended in the reporting zone, every earlier period
// must be closed (except before the first close), and the zone must be the
// one the books were closed in so far.
func (c Calendar) DecideClose(cmd CloseCommand) ([]Event, error) {
	if strings.TrimSpace(cmd.Actor) == "" {
		return nil, ErrActorRequired
	}
	if cmd.Zone == nil {
		return nil, fmt.Errorf("%w: no reporting time zone given", ErrZoneMismatch)
	}
	if c.zone != "" && c.zone != cmd.Zone.String() {
		return nil, fmt.Errorf("%w: the books were closed in %s, the configured zone is %s", ErrZoneMismatch, c.zone, cmd.Zone)
	}
	if err := c.canClose(cmd.Period); err != nil {
		return nil, err
	}
	if end := cmd.Period.End(cmd.Zone); cmd.Now.Before(end) {
		return nil, fmt.Errorf("%w: %s ends at %s", ErrPeriodNotEnded, cmd.Period, end.Format(time.RFC3339))
	}
	return []Event{Closed{Period: cmd.Period, Zone: cmd.Zone.String(), Actor: cmd.Actor, Note: cmd.Note, At: cmd.Now.UTC()}}, nil
}

// DecideReopen returns the event that reopens the period, or why it cannot
// be reopened: it must be the last closed period, and a reason is required.
func (c Calendar) DecideReopen(cmd ReopenCommand) ([]Event, error) {
	if strings.TrimSpace(cmd.Actor) == "" {
		return nil, ErrActorRequired
	}
	if strings.TrimSpace(cmd.Reason) == "" {
		return nil, ErrReasonRequired
	}
	if err := c.canReopen(cmd.Period); err != nil {
		return nil, err
	}
	return []Event{Reopened{Period: cmd.Period, Actor: cmd.Actor, Reason: cmd.Reason, At: cmd.Now.UTC()}}, nil
}
