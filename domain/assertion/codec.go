package assertion

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

// ErrUnknownEventType is returned (wrapped) by Encode and Decode for a type
// they do not know.
var ErrUnknownEventType = errors.New("unknown assertion event type")

// The stored JSON shapes: private wire structs, so the domain types carry
// no tags and the shape changes only here. Times are RFC 3339 with
// nanoseconds, in UTC.
type wirePoint struct {
	Key    string `json:"key"`
	AsOf   string `json:"as_of"`
	Amount int64  `json:"amount"`
}

type wireStated struct {
	Provider string      `json:"provider"`
	Account  string      `json:"account"`
	Currency string      `json:"currency"`
	Source   string      `json:"source"`
	Actor    string      `json:"actor,omitempty"`
	Note     string      `json:"note,omitempty"`
	At       string      `json:"at"`
	Points   []wirePoint `json:"points"`
}

type wireOpened struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	Account  string `json:"account"`
	Currency string `json:"currency"`
	AsOf     string `json:"as_of"`
	Amount   int64  `json:"amount"`
	Actor    string `json:"actor"`
	Note     string `json:"note"`
	At       string `json:"at"`
}

type wirePosting struct {
	Account  string `json:"account"`
	Currency string `json:"currency"`
	Amount   int64  `json:"amount"`
}

type wireAdjusted struct {
	ID          string        `json:"id"`
	ItemID      string        `json:"item_id"`
	Reverses    string        `json:"reverses,omitempty"`
	Provider    string        `json:"provider"`
	EffectiveAt string        `json:"effective_at"`
	Postings    []wirePosting `json:"postings"`
	Actor       string        `json:"actor"`
	Note        string        `json:"note"`
	At          string        `json:"at"`
}

type wireItem struct {
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Actor string `json:"actor"`
	Note  string `json:"note"`
	At    string `json:"at"`
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Encode returns the stable type name and JSON body of e.
func Encode(e Event) (typ string, data []byte, err error) {
	var w any
	switch e := e.(type) {
	case Stated:
		ps := make([]wirePoint, len(e.Points))
		for i, p := range e.Points {
			ps[i] = wirePoint{p.Key, ts(p.AsOf), p.Amount}
		}
		w = wireStated{e.Provider, e.Account, string(e.Currency), e.Source, e.Actor, e.Note, ts(e.At), ps}
	case Opened:
		w = wireOpened{e.ID.String(), e.Provider, e.Account, string(e.Currency), ts(e.AsOf), e.Amount, e.Actor, e.Note, ts(e.At)}
	case Adjusted:
		ps := make([]wirePosting, len(e.Postings))
		for i, p := range e.Postings {
			ps[i] = wirePosting{p.Account, string(p.Currency), p.Amount}
		}
		rev := ""
		if e.Reverses != uuid.Nil {
			rev = e.Reverses.String()
		}
		w = wireAdjusted{e.ID.String(), e.ItemID, rev, e.Provider, ts(e.EffectiveAt), ps, e.Actor, e.Note, ts(e.At)}
	case ItemResolved:
		w = wireItem{e.Kind, e.Key, e.Actor, e.Note, ts(e.At)}
	case ItemReopened:
		w = wireItem{e.Kind, e.Key, e.Actor, e.Note, ts(e.At)}
	default:
		return "", nil, fmt.Errorf("%w: %T", ErrUnknownEventType, e)
	}
	data, err = json.Marshal(w)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", e.Type(), err)
	}
	return e.Type(), data, nil
}

// Decode is the inverse of Encode. Unknown JSON fields are ignored.
func Decode(typ string, data []byte) (Event, error) {
	e, err := decode(typ, data)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", typ, err)
	}
	return e, nil
}

func decode(typ string, data []byte) (Event, error) {
	var p parser
	switch typ {
	case TypeStated:
		var w wireStated
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, err
		}
		e := Stated{Provider: w.Provider, Account: w.Account, Currency: money.Currency(w.Currency), Source: w.Source,
			Actor: w.Actor, Note: w.Note, At: p.time(w.At), Points: make([]Point, len(w.Points))}
		for i, x := range w.Points {
			e.Points[i] = Point{Key: x.Key, AsOf: p.time(x.AsOf), Amount: x.Amount}
		}
		return e, p.err
	case TypeOpened:
		var w wireOpened
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, err
		}
		return Opened{ID: p.id(w.ID), Provider: w.Provider, Account: w.Account, Currency: money.Currency(w.Currency),
			AsOf: p.time(w.AsOf), Amount: w.Amount, Actor: w.Actor, Note: w.Note, At: p.time(w.At)}, p.err
	case TypeAdjusted:
		var w wireAdjusted
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, err
		}
		e := Adjusted{ID: p.id(w.ID), ItemID: w.ItemID, Provider: w.Provider, EffectiveAt: p.time(w.EffectiveAt),
			Actor: w.Actor, Note: w.Note, At: p.time(w.At), Postings: make([]ledger.Posting, len(w.Postings))}
		if w.Reverses != "" {
			e.Reverses = p.id(w.Reverses)
		}
		for i, x := range w.Postings {
			e.Postings[i] = ledger.Posting{Account: x.Account, Currency: money.Currency(x.Currency), Amount: x.Amount}
		}
		return e, p.err
	case TypeItemResolved, TypeItemReopened:
		var w wireItem
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, err
		}
		if typ == TypeItemResolved {
			return ItemResolved{w.Kind, w.Key, w.Actor, w.Note, p.time(w.At)}, p.err
		}
		return ItemReopened{w.Kind, w.Key, w.Actor, w.Note, p.time(w.At)}, p.err
	}
	return nil, ErrUnknownEventType
}

// parser keeps the first parse error of a wire struct's fields.
type parser struct{ err error }

func (p *parser) time(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil && p.err == nil {
		p.err = err
	}
	return t
}

func (p *parser) id(s string) uuid.UUID {
	u, err := uuid.Parse(s)
	if err != nil && p.err == nil {
		p.err = err
	}
	return u
}
