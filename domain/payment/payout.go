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
//
// A payout can fail after it was reported paid (Stripe: "a bank can return a
// payout days after payout.paid", payout.failed; payout.canceled before it
// left). The failure is final: recorded once, it reverses the payout's
// postings when the payout had posted, and a report of the payout as paid
// that arrives after its failure posts nothing, so either order ends with
// nothing in bank:payouts.
type payout struct {
	applied map[string]bool         // dedup keys of the deliveries already recorded
	paid    map[string]PayoutPaid   // payout ids already recorded
	failed  map[string]PayoutFailed // payout ids recorded as failed
	flagged map[reconKey]bool       // items ever opened: mismatches are flagged once
	settle  payoutSettle            // settlement lines (settle_payout.go)
	refs    map[string][2]string    // payout id: its trace id and statement descriptor, as recorded
}

func newPayout() *payout {
	return &payout{applied: map[string]bool{}, paid: map[string]PayoutPaid{}, failed: map[string]PayoutFailed{},
		flagged: map[reconKey]bool{}, refs: map[string][2]string{}}
}

// setRefs records what a bank line may name a payout by: the first value
// of each stands.
func (po *payout) setRefs(id, trace, descriptor string) {
	r := po.refs[id]
	if r[0] == "" {
		r[0] = trace
	}
	if r[1] == "" {
		r[1] = descriptor
	}
	po.refs[id] = r
}

// traced returns the PayoutTraced a report of paid payout f.BusinessID
// adds: the trace id or statement descriptor not recorded yet (Stripe's
// payout.updated once trace_id is "supported"); nil when it adds none.
func (po *payout) traced(meta Meta, f delivery.Fact) Event {
	r := po.refs[f.BusinessID]
	e := PayoutTraced{Meta: meta, PayoutID: f.BusinessID}
	if r[0] == "" {
		e.TraceID = f.TraceID
	}
	if r[1] == "" {
		e.Descriptor = f.Descriptor
	}
	if e.TraceID == "" && e.Descriptor == "" {
		return nil
	}
	return e
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
		po.setRefs(e.PayoutID, e.TraceID, e.Descriptor)
	case PayoutTraced:
		po.setRefs(e.PayoutID, e.TraceID, e.Descriptor)
	case PayoutFailed:
		if _, ok := po.failed[e.PayoutID]; !ok {
			po.failed[e.PayoutID] = e
		}
	case Flagged:
		po.flagged[reconKey{e.Kind, e.Key}] = true
	case Cleared:
	case LineSettled, FeeSettled, Converted, PayoutLinesCounted: // settle_payout.go
	case Resolved, Reopened:
		// An operator's word on an item: not a delivery, nothing applied.
		return nil
	default:
		return fmt.Errorf("%s in a payout stream: %w", e.Type(), ErrForeignEvent)
	}
	po.applySettled(e)
	po.applied[e.Metadata().DedupKey] = true
	return nil
}

func (po *payout) decide(in delivery.Event) ([]Event, error) {
	out, err := po.decideFacts(in)
	if err != nil {
		return nil, err
	}
	// Whatever the delivery said (the payout paid, failed, its lines), the
	// lines counted so far may now prove the payout or not; a failed payout
	// is not judged.
	if out, err = po.closeFailed(in, out); err != nil { // settle_payout.go
		return nil, err
	}
	return po.checkLines(in, out)
}

func (po *payout) decideFacts(in delivery.Event) ([]Event, error) {
	if in.SettledLine() != nil { // settle_payout.go
		return po.decideSettled(in)
	}
	if in.Facts[0].Kind == delivery.KindPayoutLines { // settle_payout.go
		return po.decideLines(in)
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
		var es []Event
		first, paid := po.paid[f.BusinessID]
		failure, failed := po.failed[f.BusinessID]
		known := paid || failed
		if !paid && failed {
			first = PayoutPaid{PayoutID: failure.PayoutID, Amount: failure.Amount, Currency: failure.Currency}
		}
		if k := (reconKey{ReconCurrencyMismatch, f.BusinessID}); known && f.Currency != first.Currency {
			if !po.flagged[k] {
				es = append(es, Flagged{Meta: meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf("payout %s reported in %s and in %s",
					f.BusinessID, first.Currency, f.Currency)})
			}
		} else if k := (reconKey{ReconAmountMismatch, f.BusinessID}); known && f.Amount != first.Amount && !po.flagged[k] {
			es = append(es, Flagged{Meta: meta, Kind: k.kind, Key: k.key, Details: fmt.Sprintf("payout %s reported as %s and as %s",
				f.BusinessID, money.FormatMinor(first.Amount, first.Currency), money.FormatMinor(f.Amount, f.Currency))})
		}
		switch {
		case f.Kind == delivery.KindPayoutPaid && !known:
			es = append(es, PayoutPaid{Meta: meta, PayoutID: f.BusinessID, Amount: f.Amount, Currency: f.Currency,
				ArrivalDate: f.ArrivalDate, TraceID: f.TraceID, Descriptor: f.Descriptor})
		case f.Kind == delivery.KindPayoutPaid && paid && !failed:
			if e := po.traced(meta, f); e != nil {
				es = append(es, e)
			}
		case f.Kind == delivery.KindPayoutFailed && !failed:
			// The reversal moves what was paid, whatever this report says.
			amount, cur := f.Amount, f.Currency
			if paid {
				amount, cur = first.Amount, first.Currency
			}
			es = append(es, PayoutFailed{Meta: meta, PayoutID: f.BusinessID, Amount: amount, Currency: cur,
				Reason: delivery.TruncateReason(f.Reason), WasPaid: paid})
		}
		for _, e := range es {
			if err := emit(e); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
