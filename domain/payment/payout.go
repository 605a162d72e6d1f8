package payment

import (
	"fmt"

	"github.com/onceledger/onceledger/domain/provider"
)

// payout is the aggregate of a payout stream (payout-{provider}-{payout id}):
// it records one PayoutPaid per payout id, however often and under however
// many dedup keys the payout is reported.
type payout struct {
	applied map[string]bool // dedup keys of the deliveries already recorded
	paid    map[string]bool // payout ids already recorded
}

func newPayout() *payout {
	return &payout{applied: map[string]bool{}, paid: map[string]bool{}}
}

func (po *payout) apply(e Event) error {
	pp, ok := e.(PayoutPaid)
	if !ok {
		return fmt.Errorf("%s in a payout stream: %w", e.Type(), ErrForeignEvent)
	}
	po.applied[pp.DedupKey] = true
	po.paid[pp.PayoutID] = true
	return nil
}

func (po *payout) decide(in provider.Event) ([]Event, error) {
	id := in.Facts[0].BusinessID
	for i, f := range in.Facts {
		// The stream is named after the first payout id; a delivery naming
		// several payouts would record the others in the wrong stream.
		if f.BusinessID != id {
			return nil, fmt.Errorf("%w: fact %d names payout %q, the delivery is about payout %q",
				provider.ErrMalformed, i, f.BusinessID, id)
		}
	}
	if po.applied[in.DedupKey] {
		return nil, nil
	}
	var out []Event
	for _, f := range in.Facts {
		if po.paid[f.BusinessID] {
			continue
		}
		e := PayoutPaid{
			Meta:     Meta{Provider: in.Provider, PaymentKey: f.BusinessID, DedupKey: in.DedupKey, OccurredAt: in.OccurredAt},
			PayoutID: f.BusinessID,
			Amount:   f.Amount,
			Currency: f.Currency,
		}
		out = append(out, e)
		if err := po.apply(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}
