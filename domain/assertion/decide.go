package assertion

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

// State is what a stream's history leaves for the decisions: the points
// stated (by key), the opening balance, the adjustments and which of them
// are reversed. Whether the stream's balance_mismatch item is open is the
// projection's to say: it depends on the ledger.
type State struct {
	points   map[string]Point
	opened   *Opened
	adjusted map[uuid.UUID]Adjusted
	reversed map[uuid.UUID]bool
}

// Fold folds a stream's events into its State.
func Fold(history []Event) State {
	var s State
	for _, e := range history {
		s.Apply(e)
	}
	return s
}

// Apply folds one more event into s: a caller appending several decisions
// to one stream in a row (a file's many points) keeps folding instead of
// reading the stream again.
func (s *State) Apply(e Event) {
	switch e := e.(type) {
	case Stated:
		if s.points == nil {
			s.points = map[string]Point{}
		}
		for _, p := range e.Points {
			s.points[p.Key] = p
		}
	case Opened:
		s.opened = &e
	case Adjusted:
		if s.adjusted == nil {
			s.adjusted, s.reversed = map[uuid.UUID]Adjusted{}, map[uuid.UUID]bool{}
		}
		s.adjusted[e.ID] = e
		if e.Reverses != uuid.Nil {
			s.reversed[e.Reverses] = true
		}
	}
}

// Statement is the command to record stated balances of one account and
// currency.
type Statement struct {
	Provider string
	Account  string
	Currency money.Currency
	Source   string
	Actor    string // a person's statement: who, with Note
	Note     string
	Points   []Point
}

// Validate checks a statement's fields, naming the first wrong one.
func (c Statement) Validate() error {
	p, ok := ProviderOf(c.Account)
	switch {
	case !ok:
		return invalid("account", "%q is not a provider or bank account of the chart (provider:NAME:balance, provider:NAME:reserve, bank:NAME)", c.Account)
	case c.Provider != "" && c.Provider != p:
		return invalid("provider", "%q does not hold account %q", c.Provider, c.Account)
	}
	if err := checkCurrency("currency", c.Currency); err != nil {
		return err
	}
	if strings.TrimSpace(c.Source) == "" {
		return invalid("source", "required: what states the balance")
	}
	if len(c.Points) == 0 {
		return invalid("amount", "no balance stated")
	}
	for _, pt := range c.Points {
		if err := checkTime("as_of", pt.AsOf); err != nil {
			return err
		}
		if err := checkAmount("amount", pt.Amount); err != nil {
			return err
		}
		if pt.Key == "" {
			return invalid("key", "each stated balance needs a key")
		}
	}
	return nil
}

// DecideStatement decides recording c on a stream whose state is s: one
// Stated with the points not recorded before (nothing when all were: a
// file imported again), or an error wrapping ErrInvalid or ErrConflict (a
// key recorded with another amount or moment).
func DecideStatement(s State, c Statement, now time.Time) ([]Event, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	provider, _ := ProviderOf(c.Account)
	var fresh []Point
	seen := map[string]bool{}
	for _, p := range c.Points {
		if old, ok := s.points[p.Key]; ok {
			if old.Amount != p.Amount || !old.AsOf.Equal(p.AsOf) {
				return nil, fmt.Errorf("%w: balance %s of %s %s was stated as %d at %s, now %d at %s",
					ErrConflict, p.Key, c.Account, c.Currency, old.Amount, old.AsOf.UTC().Format(time.RFC3339), p.Amount, p.AsOf.UTC().Format(time.RFC3339))
			}
			continue
		}
		if seen[p.Key] {
			continue
		}
		seen[p.Key] = true
		p.AsOf = p.AsOf.UTC()
		fresh = append(fresh, p)
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	return []Event{Stated{Provider: provider, Account: c.Account, Currency: c.Currency, Source: c.Source,
		Actor: c.Actor, Note: c.Note, At: now.UTC(), Points: fresh}}, nil
}

// Opening is the command to record an opening balance. ID is injected.
type Opening struct {
	ID       uuid.UUID
	Account  string
	Currency money.Currency
	AsOf     time.Time
	Amount   int64
	Actor    string
	Note     string
}

// DecideOpening decides an opening balance: one Opened, or an error
// wrapping ErrInvalid, or ErrConflict when one is recorded already (a
// wrong one is corrected by an adjustment, never replaced). Whether its
// date lies in a closed period is the caller's to check (the calendar is
// another aggregate).
func DecideOpening(s State, c Opening, now time.Time) ([]Event, error) {
	provider, ok := ProviderOf(c.Account)
	if !ok && !InChart(c.Account) {
		return nil, invalid("account", "%q is not an account of the chart", c.Account)
	}
	if IsBatchAccount(c.Account) {
		return nil, invalid("account", "%q is a payout batch's scope, not an account of the chart", c.Account)
	}
	if c.Account == OpeningBalances {
		return nil, invalid("account", "the opening balance of %s is the other side of every opening balance", OpeningBalances)
	}
	if err := checkCurrency("currency", c.Currency); err != nil {
		return nil, err
	}
	if err := checkTime("as_of", c.AsOf); err != nil {
		return nil, err
	}
	if err := checkAmount("amount", c.Amount); err != nil {
		return nil, err
	}
	if err := actorNote(c.Actor, c.Note); err != nil {
		return nil, err
	}
	if s.opened != nil {
		return nil, fmt.Errorf("%w: %s %s has an opening balance already (%d as of %s); correct it with an adjustment",
			ErrConflict, c.Account, c.Currency, s.opened.Amount, s.opened.AsOf.Format(time.RFC3339))
	}
	return []Event{Opened{ID: c.ID, Provider: provider, Account: c.Account, Currency: c.Currency, AsOf: c.AsOf.UTC(),
		Amount: c.Amount, Actor: c.Actor, Note: c.Note, At: now.UTC()}}, nil
}

func actorNote(actor, note string) error {
	if strings.TrimSpace(note) == "" {
		return invalid("note", "required: say why")
	}
	if strings.TrimSpace(actor) == "" {
		return invalid("actor", "required")
	}
	return nil
}

// Adjustment is the command to post an adjustment. ID is injected; with
// Reverses set and no Postings, the postings are the reversed
// adjustment's, negated.
type Adjustment struct {
	ID          uuid.UUID
	ItemID      string
	Reverses    uuid.UUID
	Provider    string
	EffectiveAt time.Time
	Postings    []ledger.Posting
	Actor       string
	Note        string
}

// DecideAdjustment decides an adjustment on a stream whose state is s: one
// Adjusted, or an error wrapping ErrInvalid (postings that do not balance
// per currency, an account outside the chart, …) or ErrConflict (reversing
// an adjustment reversed already, or not of this stream).
func DecideAdjustment(s State, c Adjustment, now time.Time) ([]Event, error) {
	if err := actorNote(c.Actor, c.Note); err != nil {
		return nil, err
	}
	if err := checkTime("effective_at", c.EffectiveAt); err != nil {
		return nil, err
	}
	ps := c.Postings
	if c.Reverses != uuid.Nil {
		orig, ok := s.adjusted[c.Reverses]
		switch {
		case !ok:
			return nil, invalid("reverses", "no adjustment %s resolves this item", c.Reverses)
		case s.reversed[c.Reverses]:
			return nil, fmt.Errorf("%w: adjustment %s is reversed already", ErrConflict, c.Reverses)
		case orig.Reverses != uuid.Nil:
			return nil, invalid("reverses", "adjustment %s is itself a reversal; post a new adjustment", c.Reverses)
		}
		if len(ps) == 0 {
			for _, p := range orig.Postings {
				ps = append(ps, ledger.Posting{Account: p.Account, Currency: p.Currency, Amount: -p.Amount})
			}
		}
	}
	if err := CheckPostings(ps); err != nil {
		return nil, err
	}
	return []Event{Adjusted{ID: c.ID, ItemID: c.ItemID, Reverses: c.Reverses, Provider: c.Provider,
		EffectiveAt: c.EffectiveAt.UTC(), Postings: ps, Actor: c.Actor, Note: c.Note, At: now.UTC()}}, nil
}

// CheckPostings checks an adjustment's postings: at least two, each on an
// account of the chart, in a currency with minor units, non-zero and
// within bounds, summing to zero per currency. The error names the field
// (postings[i].account, …).
func CheckPostings(ps []ledger.Posting) error {
	if len(ps) < 2 {
		return invalid("postings", "at least two postings are needed")
	}
	for i, p := range ps {
		f := fmt.Sprintf("postings[%d].", i)
		if !InChart(p.Account) {
			return invalid(f+"account", "%q is not an account of the chart", p.Account)
		}
		if err := checkCurrency(f+"currency", p.Currency); err != nil {
			return err
		}
		if p.Amount == 0 {
			return invalid(f+"amount", "zero")
		}
		if err := checkAmount(f+"amount", p.Amount); err != nil {
			return err
		}
	}
	if err := ledger.Check(ps); err != nil {
		return invalid("postings", "%v", err)
	}
	return nil
}

// ItemAction is an operator's resolve (Reopen false) or reopen of the
// balance_mismatch item of the stream, with a note but no money.
type ItemAction struct {
	Kind, Key   string
	Actor, Note string
	Reopen      bool
}

// DecideItemAction decides the action: one ItemResolved or ItemReopened.
// Whether the item is open is the read model's (it follows the ledger), so
// resolving one twice is not refused here.
func DecideItemAction(s State, c ItemAction, now time.Time) ([]Event, error) {
	if err := actorNote(c.Actor, c.Note); err != nil {
		return nil, err
	}
	if c.Kind != ReconBalanceMismatch {
		return nil, invalid("id", "the item kind %q does not live in a balance stream", c.Kind)
	}
	if c.Reopen {
		return []Event{ItemReopened{c.Kind, c.Key, c.Actor, c.Note, now.UTC()}}, nil
	}
	return []Event{ItemResolved{c.Kind, c.Key, c.Actor, c.Note, now.UTC()}}, nil
}
