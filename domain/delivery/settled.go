package delivery

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/onceledger/onceledger/domain/money"

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
	ev := Event{
		Provider:    l.Provider,
		DedupKey:    l.DedupKey(),
		Type:        "settlement." + string(l.Kind),
		PaymentKey:  l.PaymentKey,
		OccurredAt:  l.OccurredAt,
		PayloadHash: l.FactsHash(),
		Raw:         raw,
		Facts:       []Fact{{Kind: KindSettled, BusinessID: l.BusinessID(), Currency: l.Currency, Settlement: &line}},
	}
	ev.AddReferences(l.MerchantRef) // an expected payment's reference (adapters/expectations)
	return ev
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
	ev := Event{
		Provider:   provider,
		DedupKey:   "unsettled:" + paymentKey + "@" + asOf.Format(time.RFC3339) + "/" + strconv.FormatInt(secs, 10),
		Type:       "settlement.unsettled_check",
		PaymentKey: paymentKey,
		OccurredAt: asOf,
		Raw:        fmt.Appendf(nil, `{"payment":%q,"as_of":%q,"after_seconds":%d}`, paymentKey, asOf.Format(time.RFC3339), secs),
		Facts:      []Fact{{Kind: KindUnsettledCheck, BusinessID: paymentKey, Amount: secs}},
	}
	ev.PayloadHash = ev.FactsHash()
	return ev
}

// KindPayoutLines lists lines of one payout (BusinessID) as a report gave
// them (Fact.Counted: each line's dedup key and net, in Currency), so that
// the payout's stream can prove the payout: the nets of all the lines it was
// told of sum to its amount, or payout_mismatch opens. Lines already counted
// (an overlapping report) count once.
const KindPayoutLines Kind = "payout_lines"

// PayoutLines returns the delivery of up to settlement.MaxCountedPerDelivery
// lines of payout. Its dedup key is derived from the payout and the lines,
// so the same lines from the same report again are one delivery.
func PayoutLines(provider, payoutID string, c money.Currency, lines []settlement.Counted, at time.Time) Event {
	h := sha256.New()
	h.Write([]byte(payoutID))
	for _, l := range lines {
		h.Write([]byte{0})
		h.Write([]byte(l.Key))
		h.Write([]byte{0})
		h.Write([]byte(strconv.FormatInt(l.Net, 10)))
	}
	ev := Event{
		Provider:   provider,
		DedupKey:   "payout-lines:" + hex.EncodeToString(h.Sum(nil)),
		Type:       "settlement.payout_lines",
		OccurredAt: at,
		// The inbox keeps what was asserted, for audit: the lines are in
		// the normalized facts; the raw copy says what the delivery is.
		Raw:   fmt.Appendf(nil, `{"payout":%q,"currency":%q,"lines":%d}`, payoutID, c, len(lines)),
		Facts: []Fact{{Kind: KindPayoutLines, BusinessID: payoutID, Currency: c, Counted: lines}},
	}
	ev.PayloadHash = ev.FactsHash()
	return ev
}

func validateCounted(f Fact) error {
	if f.BusinessID == "" {
		return fmt.Errorf("%w: payout id of payout lines", ErrMissingField)
	}
	if len(f.Counted) == 0 || len(f.Counted) > settlement.MaxCountedPerDelivery {
		return fmt.Errorf("%w: %d payout lines in one delivery (1 to %d)", ErrMalformed, len(f.Counted), settlement.MaxCountedPerDelivery)
	}
	for i, c := range f.Counted {
		if err := checkID(fmt.Sprintf("payout line %d key", i), c.Key); err != nil {
			return err
		}
		if c.Key == "" {
			return fmt.Errorf("%w: payout line %d key", ErrMissingField, i)
		}
		if c.Net > settlement.MaxAmount || c.Net < -settlement.MaxAmount {
			return fmt.Errorf("%w: payout line %d net %d beyond 10^15", ErrInvalidAmount, i, c.Net)
		}
	}
	return nil
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
