// Package expectation is the expected-payment aggregate: a payment the
// merchant's order service announces before the provider reports it
// (provider, the merchant's reference the provider echoes, amount,
// currency, expires_at), so that a payment whose webhook never comes is
// noticed. Each expectation is its own stream (expectation-{id}, the id a
// UUIDv5 of provider and reference: registering twice is one stream);
// registration and cancellation are commands of the writer; paid, overdue
// and failed are decided by the process manager that follows the feed and
// the clock. Its reconciliation items (payment_overdue, amount_mismatch)
// are payment.Flagged / payment.Cleared events in the same stream, so the
// reconciliation projection and the operators' actions treat them as every
// other item. Pure: the clock is passed in.
package expectation

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// StreamPrefix starts every expectation's stream id.
const StreamPrefix = "expectation-"

// namespace is the UUIDv5 namespace of expectation ids: an id is a pure
// function of (provider, reference), so the stream decides idempotency, not
// a lookup in a read model.
var namespace = uuid.MustParse("6c0b5b2e-9a4f-5d8e-8a52-3f0e7f1d4b11")

// IDOf is the id of the expectation of (provider, reference).
func IDOf(provider, reference string) uuid.UUID {
	return uuid.NewSHA1(namespace, []byte(provider+"\x00"+reference))
}

// StreamID is the stream of the expectation id.
func StreamID(id uuid.UUID) string { return StreamPrefix + id.String() }

// IDOfStream is the inverse of StreamID; ok is false for another stream.
func IDOfStream(stream string) (uuid.UUID, bool) {
	s, found := strings.CutPrefix(stream, StreamPrefix)
	if !found {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(s)
	return id, err == nil
}

// Status of an expectation, as GET /v1/expected-payments lists it.
type Status string

const (
	StatusExpected Status = "expected"
	StatusPaid     Status = "paid"
	StatusOverdue  Status = "overdue"
	StatusFailed   Status = "failed"
	StatusCanceled Status = "canceled"
)

// Statuses lists every status, for the filters' validation.
func Statuses() []Status {
	return []Status{StatusExpected, StatusPaid, StatusOverdue, StatusFailed, StatusCanceled}
}

// Reconciliation kinds an expectation opens in its stream.
const (
	// ReconPaymentOverdue: nothing paid by expires_at; cleared by a late
	// capture.
	ReconPaymentOverdue = payment.ReconPaymentOverdue
	// ReconAmountMismatch: the capture's amount or currency differs from
	// the expectation's (payment.ReconAmountMismatch, in the expectation's
	// stream).
	ReconAmountMismatch = payment.ReconAmountMismatch
)

// Providers lists the providers an expectation may name; only some are
// asked (Asked).
func Providers() []string {
	return []string{"stripe", "adyen", "paypal", "square", "circle", "alipay", "wechatpay", "standard"}
}

// Asked reports whether onceledger asks provider's API about a payment
// that stays unpaid (docs/providers.md); the others go overdue unasked.
func Asked(provider string) bool {
	return provider == "stripe" || provider == "alipay" || provider == "wechatpay"
}

// Errors of the commands; the HTTP layer maps them (400, 404, 409).
var (
	// ErrInvalid: a malformed registration; the message names the field.
	ErrInvalid = errors.New("invalid expected payment")
	// ErrConflict: the reference is registered with another amount or
	// currency.
	ErrConflict = errors.New("expected payment registered with another amount or currency")
	// ErrNotFound: no expectation has that id.
	ErrNotFound = errors.New("no such expected payment")
	// ErrPaid: a paid expectation cannot be canceled.
	ErrPaid = errors.New("expected payment is paid already")
	// ErrActorRequired: a command names who gave it.
	ErrActorRequired = errors.New("an actor is required")
)

// Expectation is the fold of one stream.
type Expectation struct {
	ID           uuid.UUID
	Provider     string
	Reference    string
	Amount       int64
	Currency     money.Currency
	ExpiresAt    time.Time
	RegisteredAt time.Time
	Status       Status
	// Late: paid after it had gone overdue.
	Late bool
	// The capture that paid it: its payment stream, capture id and
	// amount (which may differ: amount_mismatch).
	PaymentStream string
	CaptureID     string
	PaidAmount    int64
	PaidCurrency  money.Currency
	PaidAt        time.Time
	Reason        string // of failed; the note of canceled
	// Version is the number of events folded (the stream's last version
	// + 1): the expected version of the next append.
	Version int
	// Items are the reconciliation items of the stream.
	Items []payment.ItemState
}

// Exists reports whether the expectation was registered.
func (x Expectation) Exists() bool { return x.Reference != "" }

// Terminal reports whether nothing can change the status any more but an
// operator's cancel (paid, canceled).
func (x Expectation) Terminal() bool { return x.Status == StatusPaid || x.Status == StatusCanceled }

// Fold folds a stream's events, in order.
func Fold(history []payment.Event) Expectation {
	var x Expectation
	for _, e := range history {
		x.Version++
		switch e := e.(type) {
		case Registered:
			x.ID, x.Provider, x.Reference = e.ExpectationID, e.Meta.Provider, e.Meta.PaymentKey
			x.Amount, x.Currency, x.ExpiresAt, x.RegisteredAt = e.Amount, e.Currency, e.ExpiresAt, e.Meta.OccurredAt
			x.Status = StatusExpected
		case Paid:
			x.Status, x.Late = StatusPaid, e.Late
			x.PaymentStream, x.CaptureID, x.PaidAmount, x.PaidCurrency, x.PaidAt = e.PaymentStream, e.CaptureID, e.Amount, e.Currency, e.Meta.OccurredAt
		case Overdue:
			x.Status = StatusOverdue
		case Failed:
			x.Status, x.Reason = StatusFailed, e.Reason
		case Canceled:
			x.Status, x.Reason = StatusCanceled, e.Note
		}
	}
	x.Items = payment.Items(history)
	return x
}

// RegisterCommand is POST /v1/expected-payments.
type RegisterCommand struct {
	Provider  string
	Reference string
	Amount    int64
	Currency  string
	ExpiresAt time.Time
	Actor     string
	Now       time.Time
}

// Validate checks a registration; the error wraps ErrInvalid and names the
// field.
func (c RegisterCommand) Validate() (money.Currency, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
	}
	known := false
	for _, p := range Providers() {
		known = known || p == c.Provider
	}
	switch {
	case c.Provider == "":
		return "", bad("provider", "required")
	case !known:
		return "", bad("provider", "%q is not one of %s", c.Provider, strings.Join(Providers(), ", "))
	case strings.TrimSpace(c.Reference) == "":
		return "", bad("reference", "required")
	case c.Reference != strings.TrimSpace(c.Reference):
		return "", bad("reference", "%q has surrounding spaces", c.Reference)
	case len(c.Reference) > delivery.MaxIDBytes:
		return "", bad("reference", "%d bytes, more than %d", len(c.Reference), delivery.MaxIDBytes)
	case c.Amount <= 0:
		return "", bad("amount", "%d: want a positive integer in minor units", c.Amount)
	case c.Amount > delivery.MaxAmount:
		return "", bad("amount", "%d is above the limit of %d minor units", c.Amount, delivery.MaxAmount)
	case c.Currency == "":
		return "", bad("currency", "required")
	case c.Currency != strings.ToUpper(c.Currency):
		return "", bad("currency", "%q: want upper-case ISO 4217", c.Currency)
	case c.ExpiresAt.IsZero():
		return "", bad("expires_at", "required (RFC 3339)")
	case !c.ExpiresAt.After(c.Now):
		return "", bad("expires_at", "%s is not in the future", c.ExpiresAt.UTC().Format(time.RFC3339))
	case strings.TrimSpace(c.Actor) == "":
		return "", ErrActorRequired
	}
	cur, err := money.ParseCurrency(c.Currency)
	if err != nil {
		return "", bad("currency", "%v", err)
	}
	return cur, nil
}

// DecideRegister decides a registration on the stream of IDOf(provider,
// reference): Registered the first time; nothing when the same amount and
// currency are registered already (the same body again: the caller answers
// with the stored expectation, whatever expires_at it sent); ErrConflict
// for another amount or currency.
func DecideRegister(history []payment.Event, c RegisterCommand) ([]payment.Event, error) {
	cur, err := c.Validate()
	if err != nil {
		return nil, err
	}
	x := Fold(history)
	if x.Exists() {
		if x.Amount != c.Amount || x.Currency != cur {
			return nil, fmt.Errorf("%w: %s %s is expected as %d %s, not %d %s", ErrConflict, x.Provider, x.Reference,
				x.Amount, x.Currency, c.Amount, cur)
		}
		return nil, nil
	}
	id := IDOf(c.Provider, c.Reference)
	return []payment.Event{Registered{Meta: payment.Meta{Provider: c.Provider, PaymentKey: c.Reference, OccurredAt: c.Now.UTC()},
		ExpectationID: id, Amount: c.Amount, Currency: cur, ExpiresAt: c.ExpiresAt.UTC(), Actor: c.Actor}}, nil
}

// CancelCommand is POST /v1/expected-payments/{id}/cancel.
type CancelCommand struct {
	Actor, Note string
	Now         time.Time
}

// DecideCancel cancels an expectation not yet paid (resolving its open
// payment_overdue item: nothing is expected any more); nothing when it is
// canceled already; ErrNotFound, ErrPaid.
func DecideCancel(history []payment.Event, c CancelCommand) ([]payment.Event, error) {
	if strings.TrimSpace(c.Actor) == "" {
		return nil, ErrActorRequired
	}
	x := Fold(history)
	switch {
	case !x.Exists():
		return nil, ErrNotFound
	case x.Status == StatusCanceled:
		return nil, nil
	case x.Status == StatusPaid:
		return nil, fmt.Errorf("%w: %s %s", ErrPaid, x.Provider, x.Reference)
	}
	note := c.Note
	if note == "" {
		note = "canceled by " + c.Actor
	}
	out := []payment.Event{Canceled{Meta: x.meta(c.Now), Actor: c.Actor, Note: note}}
	return append(out, x.clear(ReconPaymentOverdue, c.Now, "expected payment canceled: "+note)...), nil
}

// CaptureSeen is a capture the feed showed for the expectation's
// (provider, reference).
type CaptureSeen struct {
	PaymentStream string
	CaptureID     string
	Amount        int64
	Currency      money.Currency
	At            time.Time
}

// DecideCapture decides what a capture means for the expectation: Paid
// (late when it was overdue, which clears payment_overdue), and an
// amount_mismatch item when its amount or currency differs; nothing when
// it is paid or canceled already (a second capture, a replay), or unknown.
func DecideCapture(history []payment.Event, c CaptureSeen) []payment.Event {
	x := Fold(history)
	if !x.Exists() || x.Terminal() {
		return nil
	}
	late := x.Status == StatusOverdue
	out := []payment.Event{Paid{Meta: x.meta(c.At), PaymentStream: c.PaymentStream, CaptureID: c.CaptureID,
		Amount: c.Amount, Currency: c.Currency, Late: late}}
	if late {
		out = append(out, x.clear(ReconPaymentOverdue, c.At, "paid late by capture "+c.CaptureID)...)
	}
	if c.Amount != x.Amount || c.Currency != x.Currency {
		out = append(out, payment.Flagged{Meta: x.meta(c.At), Kind: ReconAmountMismatch, Key: x.ID.String(),
			Details: fmt.Sprintf("expected payment %s of %s %s was paid %s %s (capture %s)", x.Reference,
				money.FormatMinor(x.Amount, x.Currency), x.Currency, money.FormatMinor(c.Amount, c.Currency), c.Currency, c.CaptureID)})
	}
	return out
}

// FailureSeen is a failed attempt the feed showed for the expectation.
type FailureSeen struct {
	PaymentStream string
	Reason        string
	At            time.Time
}

// DecideFailure records a failed attempt of an expectation still waiting
// (expected or overdue): Failed. A later capture still makes it paid (a
// customer retries after a declined card).
func DecideFailure(history []payment.Event, f FailureSeen) []payment.Event {
	x := Fold(history)
	if !x.Exists() || x.Terminal() || x.Status == StatusFailed {
		return nil
	}
	return []payment.Event{Failed{Meta: x.meta(f.At), PaymentStream: f.PaymentStream, Reason: f.Reason}}
}

// DecideClock decides what the passing of time means at now: Overdue and
// its payment_overdue item once expires_at has passed with nothing paid.
func DecideClock(history []payment.Event, now time.Time) []payment.Event {
	x := Fold(history)
	if !x.Exists() || x.Terminal() || x.Status == StatusOverdue || now.Before(x.ExpiresAt) {
		return nil
	}
	return []payment.Event{
		Overdue{Meta: x.meta(now)},
		payment.Flagged{Meta: x.meta(now), Kind: ReconPaymentOverdue, Key: x.ID.String(),
			Details: fmt.Sprintf("expected payment %s of %s %s not paid by %s", x.Reference,
				money.FormatMinor(x.Amount, x.Currency), x.Currency, x.ExpiresAt.UTC().Format(time.RFC3339))},
	}
}

func (x Expectation) meta(at time.Time) payment.Meta {
	return payment.Meta{Provider: x.Provider, PaymentKey: x.Reference, OccurredAt: at.UTC()}
}

// clear resolves the open item of kind, if any.
func (x Expectation) clear(kind string, at time.Time, details string) []payment.Event {
	for _, it := range x.Items {
		if it.Kind == kind && it.Key == x.ID.String() && it.Open {
			return []payment.Event{payment.Cleared{Meta: x.meta(at), Kind: kind, Key: it.Key, Details: details}}
		}
	}
	return nil
}
