package assertion

import (
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

// Stored event types of this package's streams.
const (
	TypeStated       = "balance.asserted"
	TypeOpened       = "balance.opening_recorded"
	TypeAdjusted     = "ledger.adjusted"
	TypeItemResolved = "balance.item_resolved"
	TypeItemReopened = "balance.item_reopened"
)

// EventTypes lists every stored type of the package.
func EventTypes() []string {
	return []string{TypeStated, TypeOpened, TypeAdjusted, TypeItemResolved, TypeItemReopened}
}

// Event is one event of an assertion or adjustment stream.
type Event interface {
	Type() string
	// RecordedAt is when the ledger recorded it (injected clock).
	RecordedAt() time.Time
}

// Point is one stated balance: Amount (minor units, signed as the ledger
// signs the account: a provider holding money for the merchant is
// positive) at AsOf. Key tells it apart within its stream, so a file
// imported twice states it once: a file's line key, or a fresh id for a
// person's statement.
type Point struct {
	Key    string
	AsOf   time.Time
	Amount int64
}

// Stated is one statement of an account's balance by a provider's file or
// API (Actor empty) or by a person (Actor, Note): one or several Points
// (a bill states the balance after each of its lines).
type Stated struct {
	Provider string
	Account  string
	Currency money.Currency
	// Source says what stated it: "alipay account bill", "stripe
	// GET /v1/balance", "bank statement 2026-12-01", a person's words.
	Source string
	Actor  string
	Note   string
	At     time.Time
	Points []Point
}

// Opened is an opening balance: Amount in Account as of AsOf, posted
// against equity:opening_balances (a ledger started after the account).
type Opened struct {
	ID       uuid.UUID
	Provider string
	Account  string
	Currency money.Currency
	AsOf     time.Time
	Amount   int64
	Actor    string
	Note     string
	At       time.Time
}

// Adjusted is an accountant's adjustment: Postings (balanced per currency)
// effective at EffectiveAt, resolving the item ItemID (as GET
// /v1/reconciliation lists it), or undoing the adjustment Reverses.
type Adjusted struct {
	ID          uuid.UUID
	ItemID      string
	Reverses    uuid.UUID // uuid.Nil: not a reversal
	Provider    string
	EffectiveAt time.Time
	Postings    []ledger.Posting
	Actor       string
	Note        string
	At          time.Time
}

// ItemResolved and ItemReopened are an operator's action on the
// balance_mismatch item of the stream (POST /v1/reconciliation/resolve,
// reopen) with a note but no money.
type ItemResolved struct {
	Kind, Key   string
	Actor, Note string
	At          time.Time
}

type ItemReopened struct {
	Kind, Key   string
	Actor, Note string
	At          time.Time
}

func (Stated) Type() string       { return TypeStated }
func (Opened) Type() string       { return TypeOpened }
func (Adjusted) Type() string     { return TypeAdjusted }
func (ItemResolved) Type() string { return TypeItemResolved }
func (ItemReopened) Type() string { return TypeItemReopened }

func (e Stated) RecordedAt() time.Time       { return e.At }
func (e Opened) RecordedAt() time.Time       { return e.At }
func (e Adjusted) RecordedAt() time.Time     { return e.At }
func (e ItemResolved) RecordedAt() time.Time { return e.At }
func (e ItemReopened) RecordedAt() time.Time { return e.At }

// Postings are what an event moves in the ledger: an opening balance and
// an adjustment post; a statement and an item action post nothing.
func Postings(e Event) []ledger.Posting {
	switch e := e.(type) {
	case Opened:
		return []ledger.Posting{
			{Account: e.Account, Currency: e.Currency, Amount: e.Amount},
			{Account: OpeningBalances, Currency: e.Currency, Amount: -e.Amount},
		}
	case Adjusted:
		return append([]ledger.Posting(nil), e.Postings...)
	}
	return nil
}

// Effective is when an event's postings take effect (the ledger's
// effective_at) and the provider they are booked under.
func Effective(e Event) (at time.Time, provider string) {
	switch e := e.(type) {
	case Opened:
		return e.AsOf, e.Provider
	case Adjusted:
		return e.EffectiveAt, e.Provider
	}
	return e.RecordedAt(), ""
}

// Actor is who made an event (empty: a provider's file or API).
func Actor(e Event) string {
	switch e := e.(type) {
	case Stated:
		return e.Actor
	case Opened:
		return e.Actor
	case Adjusted:
		return e.Actor
	case ItemResolved:
		return e.Actor
	case ItemReopened:
		return e.Actor
	}
	return ""
}
