package delivery

import (
	"fmt"
	"strconv"
	"time"

	"github.com/onceledger/onceledger/domain/settlement"
)

// KindSettled is a settlement-report line (Fact.Settlement holds it): a
// second source of facts beside webhooks, through the same gate. Its
// BusinessID is the line's business id (settlement.Line.BusinessID: the
// capture, refund, dispute or payout it reports; "" for a fee or an
// adjustment) and its Currency the settlement currency; Amount and Fee stay
// zero (the line carries its own, signed).
const KindSettled Kind = "settled"

// Settled returns the delivery of one settlement line: dedup key from the
// line's own ids (settlement.Line.DedupKey), payload hash over its money
// facts (so the same line from another format of the same provider is a
// plain duplicate), type "settlement.<kind>", and the payment key the
// provider's webhooks use, so that it joins the payment's stream. raw is the
// line as the report gave it (kept in the inbox for audit).
//
// A line tied to no payment (a payout, a fee deducted from a payout, an
// adjustment) goes to the payout stream of its payout (StreamID), or, when
// the report names no payout, to a stream of its own.
func Settled(l settlement.Line, raw []byte) Event {
	line := l
	return Event{
		Provider:    l.Provider,
		DedupKey:    l.DedupKey(),
		Type:        "settlement." + string(l.Kind),
		PaymentKey:  l.PaymentKey,
		OccurredAt:  l.OccurredAt,
		PayloadHash: l.FactsHash(),
		Raw:         raw,
		Facts:       []Fact{{Kind: KindSettled, BusinessID: l.BusinessID(), Currency: l.Currency, Settlement: &line}},
	}
}

// KindUnsettledCheck asks the payment, after a settlement report was
// imported, to open `unsettled` for each capture recorded at least Amount
// seconds (ONCELEDGER_UNSETTLED_AFTER) before OccurredAt (the report's
// latest line) that no settlement line settled. It carries no business
// fact of its own; BusinessID is the payment key.
const KindUnsettledCheck Kind = "unsettled_check"

// UnsettledCheck returns the unsettled check of one payment after a report
// whose latest line is asOf. Its dedup key names the payment and the
// report's date, so importing the same report again adds nothing.
func UnsettledCheck(provider, paymentKey string, asOf time.Time, after time.Duration) Event {
	asOf = asOf.UTC()
	secs := int64(after / time.Second)
	return Event{
		Provider:   provider,
		DedupKey:   "unsettled:" + paymentKey + "@" + asOf.Format(time.RFC3339) + "/" + strconv.FormatInt(secs, 10),
		Type:       "settlement.unsettled_check",
		PaymentKey: paymentKey,
		OccurredAt: asOf,
		Facts:      []Fact{{Kind: KindUnsettledCheck, BusinessID: paymentKey, Amount: secs}},
	}
}

// SettledLine returns the settlement line the delivery carries, or nil for
// a webhook.
func (e Event) SettledLine() *settlement.Line {
	if len(e.Facts) == 1 && e.Facts[0].Kind == KindSettled {
		return e.Facts[0].Settlement
	}
	return nil
}

// settledPayoutKey is the payout stream key of a settlement line tied to no
// payment: its payout, else the line's own dedup key ("settle:…", which no
// provider payout id looks like).
func (e Event) settledPayoutKey() (string, bool) {
	l := e.SettledLine()
	if l == nil || e.PaymentKey != "" {
		return "", false
	}
	if l.PayoutID != "" {
		return l.PayoutID, true
	}
	return l.DedupKey(), true
}

// validateSettled checks a settlement delivery: exactly one fact, a valid
// line, and an envelope that agrees with it.
func (e Event) validateSettled() error {
	if len(e.Facts) != 1 {
		return fmt.Errorf("%w: a settlement delivery carries exactly one line, not %d facts", ErrMalformed, len(e.Facts))
	}
	f := e.Facts[0]
	l := f.Settlement
	if l == nil {
		return fmt.Errorf("%w: settled fact without its line", ErrMissingField)
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	switch {
	case l.Provider != e.Provider:
		return fmt.Errorf("%w: line of provider %q in a %q delivery", ErrMalformed, l.Provider, e.Provider)
	case l.PaymentKey != e.PaymentKey:
		return fmt.Errorf("%w: line of payment %q in a delivery for payment %q", ErrMalformed, l.PaymentKey, e.PaymentKey)
	case f.BusinessID != l.BusinessID():
		return fmt.Errorf("%w: settled fact id %q is not the line's %q", ErrMalformed, f.BusinessID, l.BusinessID())
	case f.Currency != l.Currency:
		return fmt.Errorf("%w: settled fact currency %q is not the line's %q", ErrMalformed, f.Currency, l.Currency)
	case f.Amount != 0 || f.Fee != 0:
		return fmt.Errorf("%w: a settled fact carries its amounts in its line", ErrMalformed)
	}
	return nil
}
