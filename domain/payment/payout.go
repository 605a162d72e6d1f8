package payment

import (
	"fmt"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// payout is the aggregate of a payout stream (payout-{provider}-{payout id}):
// it records one PayoutPaid per payout id, however often and under however
// many dedup keys the payout is reported. A payout reported again with
// another amount or currency posts nothing and opens an amount_mismatch or
// currency_mismatch item keyed by the payout id, once.
type payout struct {
	applied map[string]bool       // dedup keys of the deliveries already recorded
	paid    map[string]PayoutPaid // payout ids already recorded
	flagged map[reconKey]bool     // items ever opened: mismatches are flagged once
	settle  payoutSettle          // settlement lines (settle_payout.go)
}

func newPayout() *payout {
	return &payout{applied: map[string]bool{}, paid: map[string]PayoutPaid{}, flagged: map[reconKey]bool{}}
}

// apply folds one recorded event. Besides PayoutPaid a payout stream holds
// reconciliation items: its own mismatches, and the conflicting_redelivery
// items the ingestion service appends to any stream.
func (po *payout) apply(e Event) error {
	switch e := e.(type) {
	case PayoutPaid:
		if _, ok := po.paid[e.PayoutID]; !ok {
			po.paid[e.PayoutID] = e
		}
	case Flagged:
		po.flagged[reconKey{e.Kind, e.Key}] = true
	case Cleared:
	case LineSettled, FeeSettled, Converted, PayoutReturned: // settle_payout.go
	default:
		return fmt.Errorf("%s in a payout stream: %w", e.Type(), ErrForeignEvent)
	}
	po.applySettled(e)
	po.applied[e.Metadata().DedupKey] = true
	return nil
}

func (po *payout) decide(in delivery.Event) ([]Event, error) {
	if in.SettledLine() != nil { // settle_payout.go
		return po.decideSettled(in)
	}
	id := in.Facts[0].BusinessID
	for i, f := range in.Facts {
		// The stream is named after the first payout id; a delivery naming
		// several payouts would record the others in the wrong stream.
		if f.BusinessID != id {
			return nil, fmt.Errorf("%w: fact %d names payout %q, the delivery is about payout %q",
				delivery.ErrMalformed, i, f.BusinessID, id)
		}
	}
	if po.applied[in.DedupKey] {
		return nil, nil
	}
	if out, ok, err := po.webhookAfterLine(in); ok { // settle_payout.go
		return out, err
	}
	meta := Meta{Provider: in.Provider, PaymentKey: id, DedupKey: in.DedupKey, OccurredAt: in.OccurredAt}
	var out []Event
	emit := func(e Event) error {
		out = append(out, e)
		return po.apply(e)
	}
	for _, f := range in.Facts {
		var e Event
		if first, ok := po.paid[f.BusinessID]; !ok {
			e = PayoutPaid{Meta: meta, PayoutID: f.BusinessID, Amount: f.Amount, Currency: f.Currency}
		} else if k := (reconKey{ReconCurrencyMismatch, f.BusinessID}); f.Currency != first.Currency && !po.flagged[k] {
			e = Flagged{Meta: meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf("payout %s reported in %s and in %s",
				f.BusinessID, first.Currency, f.Currency)}
		} else if k := (reconKey{ReconAmountMismatch, f.BusinessID}); f.Currency == first.Currency && f.Amount != first.Amount && !po.flagged[k] {
			e = Flagged{Meta: meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf("payout %s reported as %s and as %s",
				f.BusinessID, money.FormatMinor(first.Amount, first.Currency), money.FormatMinor(f.Amount, f.Currency))}
		}
		if e == nil {
			continue
		}
		if err := emit(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}
