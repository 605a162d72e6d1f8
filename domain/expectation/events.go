package expectation

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// Stable event type names. Changing one is a data migration.
const (
	TypeRegistered = "expectation.registered"
	TypePaid       = "expectation.paid"
	TypeOverdue    = "expectation.overdue"
	TypeFailed     = "expectation.failed"
	TypeCanceled   = "expectation.canceled"
)

// EventTypes is the one list of the expectation's own stored types (its
// streams also hold reconciliation.* events of package payment).
func EventTypes() []string {
	return []string{TypeRegistered, TypePaid, TypeOverdue, TypeFailed, TypeCanceled}
}

// IsEventType reports whether typ is one of the expectation's own types.
func IsEventType(typ string) bool {
	for _, t := range EventTypes() {
		if t == typ {
			return true
		}
	}
	return false
}

// The events carry payment.Meta (Provider; PaymentKey is the reference;
// OccurredAt when it was decided), so that they are payment.Events: the
// readers of the feed take them where they take every other event, and
// the postings of each are none.

// Registered: the merchant announced a payment (actor: the writer token).
type Registered struct {
	payment.Meta
	ExpectationID uuid.UUID
	Amount        int64
	Currency      money.Currency
	ExpiresAt     time.Time
	Actor         string
}

// Paid: a capture of the expected payment was recorded (by any channel).
type Paid struct {
	payment.Meta
	PaymentStream string
	CaptureID     string
	Amount        int64
	Currency      money.Currency
	Late          bool
}

// Overdue: nothing was paid by expires_at.
type Overdue struct{ payment.Meta }

// Failed: an attempt to pay it failed (a later capture still pays it).
type Failed struct {
	payment.Meta
	PaymentStream string
	Reason        string
}

// Canceled: the writer (or an admin) withdrew it.
type Canceled struct {
	payment.Meta
	Actor, Note string
}

func (Registered) Type() string { return TypeRegistered }
func (Paid) Type() string       { return TypePaid }
func (Overdue) Type() string    { return TypeOverdue }
func (Failed) Type() string     { return TypeFailed }
func (Canceled) Type() string   { return TypeCanceled }

type wireMeta struct {
	Provider   string `json:"provider"`
	Reference  string `json:"reference"`
	OccurredAt string `json:"occurred_at"`
}

type wireRegistered struct {
	wireMeta
	ID        string `json:"id"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	ExpiresAt string `json:"expires_at"`
	Actor     string `json:"actor"`
}

type wirePaid struct {
	wireMeta
	PaymentStream string `json:"payment_stream"`
	CaptureID     string `json:"capture_id"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	Late          bool   `json:"late,omitempty"`
}

type wireFailed struct {
	wireMeta
	PaymentStream string `json:"payment_stream"`
	Reason        string `json:"reason"`
}

type wireCanceled struct {
	wireMeta
	Actor string `json:"actor"`
	Note  string `json:"note"`
}

func toWire(m payment.Meta) wireMeta {
	return wireMeta{m.Provider, m.PaymentKey, m.OccurredAt.UTC().Format(time.RFC3339Nano)}
}

func (w wireMeta) meta() (payment.Meta, error) {
	t, err := time.Parse(time.RFC3339Nano, w.OccurredAt)
	if err != nil {
		return payment.Meta{}, fmt.Errorf("occurred_at: %w", err)
	}
	return payment.Meta{Provider: w.Provider, PaymentKey: w.Reference, OccurredAt: t.UTC()}, nil
}

// Encode returns the stable type and JSON body of an event of an
// expectation's stream: its own, or a reconciliation event (package
// payment's codec).
func Encode(e payment.Event) (string, []byte, error) {
	var w any
	switch e := e.(type) {
	case Registered:
		w = wireRegistered{toWire(e.Meta), e.ExpectationID.String(), e.Amount, string(e.Currency),
			e.ExpiresAt.UTC().Format(time.RFC3339Nano), e.Actor}
	case Paid:
		w = wirePaid{toWire(e.Meta), e.PaymentStream, e.CaptureID, e.Amount, string(e.Currency), e.Late}
	case Overdue:
		w = toWire(e.Meta)
	case Failed:
		w = wireFailed{toWire(e.Meta), e.PaymentStream, e.Reason}
	case Canceled:
		w = wireCanceled{toWire(e.Meta), e.Actor, e.Note}
	default:
		return payment.Encode(e)
	}
	data, err := json.Marshal(w)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", e.Type(), err)
	}
	return e.Type(), data, nil
}

// Decode is the inverse of Encode.
func Decode(typ string, data []byte) (payment.Event, error) {
	if !IsEventType(typ) {
		return payment.Decode(typ, data)
	}
	fail := func(err error) (payment.Event, error) { return nil, fmt.Errorf("decode %s: %w", typ, err) }
	switch typ {
	case TypeRegistered:
		var w wireRegistered
		if err := json.Unmarshal(data, &w); err != nil {
			return fail(err)
		}
		m, err := w.meta()
		if err != nil {
			return fail(err)
		}
		id, err := uuid.Parse(w.ID)
		if err != nil {
			return fail(fmt.Errorf("id: %w", err))
		}
		exp, err := time.Parse(time.RFC3339Nano, w.ExpiresAt)
		if err != nil {
			return fail(fmt.Errorf("expires_at: %w", err))
		}
		return Registered{Meta: m, ExpectationID: id, Amount: w.Amount, Currency: money.Currency(w.Currency), ExpiresAt: exp.UTC(), Actor: w.Actor}, nil
	case TypePaid:
		var w wirePaid
		if err := json.Unmarshal(data, &w); err != nil {
			return fail(err)
		}
		m, err := w.meta()
		if err != nil {
			return fail(err)
		}
		return Paid{Meta: m, PaymentStream: w.PaymentStream, CaptureID: w.CaptureID, Amount: w.Amount, Currency: money.Currency(w.Currency), Late: w.Late}, nil
	case TypeOverdue:
		var w wireMeta
		if err := json.Unmarshal(data, &w); err != nil {
			return fail(err)
		}
		m, err := w.meta()
		if err != nil {
			return fail(err)
		}
		return Overdue{Meta: m}, nil
	case TypeFailed:
		var w wireFailed
		if err := json.Unmarshal(data, &w); err != nil {
			return fail(err)
		}
		m, err := w.meta()
		if err != nil {
			return fail(err)
		}
		return Failed{Meta: m, PaymentStream: w.PaymentStream, Reason: w.Reason}, nil
	default: // TypeCanceled
		var w wireCanceled
		if err := json.Unmarshal(data, &w); err != nil {
			return fail(err)
		}
		m, err := w.meta()
		if err != nil {
			return fail(err)
		}
		return Canceled{Meta: m, Actor: w.Actor, Note: w.Note}, nil
	}
}
