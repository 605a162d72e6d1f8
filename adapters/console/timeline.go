package console

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// Timeline is one payment's page: its history (projections.PaymentHistory,
// as GET /v1/payments/{provider}/{payment_id} reads it) rendered fact by
// fact, with its deliveries and its reconciliation items.
type Timeline struct {
	Payment views.Payment
	// Fees are the ledger's fees per currency (views.PaymentHistory.Fees);
	// the summary's Fees is the one in the payment's currency.
	Fees  []views.CurrencyAmount
	Facts []Fact
	// Deliveries lists every delivery of the stream, also those that
	// carried no fact (duplicates of known facts, ignored types).
	Deliveries      []views.Delivery
	Items           []views.ReconciliationItem
	OpenItems       int
	ReconciledItems int
}

// Fact is one event of a stream, as the timeline shows it.
type Fact struct {
	Version    uint64
	Type       string
	EventID    string
	OccurredAt time.Time // the provider's time (zero when unknown)
	RecordedAt time.Time
	Summary    string // one line, human-readable
	Data       string // the event's JSON, indented
	DedupKey   string // the delivery that caused it
	Actor      string // who acted, for events recorded by an action
	Note       string
	Postings   []ledger.Posting
}

// fact renders one recorded event for the timeline. Events of types this
// code does not know (recorded by a newer version, or by an action) are
// shown with their type and data, and an "actor" and "note" when their data
// has them.
func fact(e eventstore.RecordedEvent) Fact {
	f := Fact{Version: e.Version, Type: e.Type, EventID: e.ID.String(), RecordedAt: e.RecordedAt, Data: indentJSON(e.Data)}
	var extra struct {
		Actor string `json:"actor"`
		Note  string `json:"note"`
	}
	_ = json.Unmarshal(e.Data, &extra)
	f.Actor, f.Note = extra.Actor, extra.Note
	ev, err := payment.Decode(e.Type, e.Data)
	if err != nil {
		f.Summary = e.Type
		return f
	}
	m := ev.Metadata()
	f.OccurredAt, f.DedupKey = m.OccurredAt, m.DedupKey
	f.Summary = summarize(ev)
	f.Postings = payment.Postings(ev)
	return f
}

func summarize(ev payment.Event) string {
	amt := func(n int64, c money.Currency) string { return formatAmount(n, c) + " " + string(c) }
	switch e := ev.(type) {
	case payment.Authorized:
		return fmt.Sprintf("Authorization %s of %s", e.AuthorizationID, amt(e.Amount, e.Currency))
	case payment.Captured:
		return fmt.Sprintf("Capture %s of %s, fee %s", e.CaptureID, amt(e.Amount, e.Currency), amt(e.Fee, e.Currency))
	case payment.FeeRecorded:
		return fmt.Sprintf("Fee %s of capture %s recorded", amt(e.Fee, e.Currency), e.CaptureID)
	case payment.Failed:
		if e.Currency != "" {
			return fmt.Sprintf("Payment of %s failed: %s", amt(e.Amount, e.Currency), e.Reason)
		}
		return "Payment failed: " + e.Reason
	case payment.Canceled:
		return "Authorization canceled: " + e.Reason
	case payment.RefundPending:
		return fmt.Sprintf("Refund %s of %s before any capture: pending", e.RefundID, amt(e.Amount, e.Currency))
	case payment.RefundPosted:
		return fmt.Sprintf("Refund %s of %s", e.RefundID, amt(e.Amount, e.Currency))
	case payment.RefundReversed:
		return fmt.Sprintf("Refund %s of %s reversed", e.RefundID, amt(e.Amount, e.Currency))
	case payment.RefundNoted:
		return fmt.Sprintf("Refund %s of %s reported %s: nothing posted", e.RefundID, amt(e.Amount, e.Currency), e.Status)
	case payment.DisputeOpened:
		return fmt.Sprintf("Dispute %s opened for %s", e.DisputeID, amt(e.Amount, e.Currency))
	case payment.DisputeWon:
		return fmt.Sprintf("Dispute %s won: %s back", e.DisputeID, amt(e.Amount, e.Currency))
	case payment.DisputeLost:
		return fmt.Sprintf("Dispute %s lost: %s", e.DisputeID, amt(e.Amount, e.Currency))
	case payment.PayoutPaid:
		return fmt.Sprintf("Payout %s of %s", e.PayoutID, amt(e.Amount, e.Currency))
	case payment.Flagged:
		return fmt.Sprintf("Reconciliation item %s (%s) opened: %s", e.Kind, e.Key, payment.PublicDetails(e.Kind, e.Key, e.Details))
	case payment.Cleared:
		return fmt.Sprintf("Reconciliation item %s (%s) resolved: %s", e.Kind, e.Key, payment.PublicDetails(e.Kind, e.Key, e.Details))
	case payment.Resolved:
		return fmt.Sprintf("Reconciliation item %s (%s) resolved by an operator", e.Kind, e.Key)
	case payment.Reopened:
		return fmt.Sprintf("Reconciliation item %s (%s) reopened by an operator", e.Kind, e.Key)
	}
	return summarizeMore(ev, amt)
}

// summarizeMore says the settlement, payout and dispute-funds events in a
// sentence (the type alone says little to an accountant).
func summarizeMore(ev payment.Event, amt func(int64, money.Currency) string) string {
	switch e := ev.(type) {
	case payment.LineSettled:
		l := e.Line
		s := fmt.Sprintf("Settlement report line %s (%s): gross %s, fee %s, net %s", l.DedupKey(), l.Kind,
			amt(l.Gross, l.Currency), amt(l.Fee, l.Currency), amt(l.Net, l.Currency))
		if l.PayoutID != "" {
			s += ", paid out in " + l.PayoutID
		}
		return s
	case payment.FeeSettled:
		return fmt.Sprintf("Fee %s posted from settlement report line %s", amt(e.Fee, e.Currency), e.LineID)
	case payment.CaptureReduced:
		return fmt.Sprintf("Capture %s reduced by %s, the uncaptured part reversed by settlement report line %s",
			e.CaptureID, amt(e.Amount, e.Currency), e.LineID)
	case payment.Converted:
		if e.OriginalCurrency == "" {
			return fmt.Sprintf("Conversion (line %s): %s settled", e.LineID, amt(e.SettledAmount, e.SettledCurrency))
		}
		return fmt.Sprintf("Conversion (line %s): %s settled as %s", e.LineID,
			amt(e.OriginalAmount, e.OriginalCurrency), amt(e.SettledAmount, e.SettledCurrency))
	case payment.PayoutLinesCounted:
		return fmt.Sprintf("Settlement report listed %d line(s) of payout %s", len(e.Lines), e.PayoutID)
	case payment.PayoutFailed:
		return fmt.Sprintf("Payout %s of %s failed: %s", e.PayoutID, amt(e.Amount, e.Currency), e.Reason)
	case payment.DisputeInquiry:
		return fmt.Sprintf("Inquiry %s about %s (no funds withdrawn)", e.DisputeID, amt(e.Amount, e.Currency))
	case payment.DisputeFundsWithdrawn:
		return fmt.Sprintf("Dispute %s: %s withdrawn", e.DisputeID, amt(e.Amount, e.Currency))
	case payment.DisputeFundsReinstated:
		return fmt.Sprintf("Dispute %s: %s reinstated", e.DisputeID, amt(e.Amount, e.Currency))
	case payment.DisputePending:
		return fmt.Sprintf("Dispute %s (%s) of %s before any capture: pending", e.DisputeID, e.Fact, amt(e.Amount, e.Currency))
	}
	return ev.Type()
}
