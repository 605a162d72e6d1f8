package payment

import (
	"fmt"

	"github.com/onceledger/onceledger/domain/delivery"
)

// Folded is a stream's history folded once and kept: Apply folds recorded
// events as they are read, Decide decides a delivery on the state and folds
// what it decided. A caller that keeps a Folded beside a stream decides
// each delivery in constant time, however long the stream (a payout with
// 100,000 settlement lines), instead of re-folding the history per
// delivery (docs/settlement.md, "Import cost").
//
// A Folded is for one kind of stream, named when it is made: a payment's or
// a payout's. After Decide or Apply failed, the state is undefined: drop it
// and fold the stream again.
type Folded struct {
	payout bool
	pay    *Payment
	po     *payout
	n      int   // events folded (recorded and decided)
	err    error // a history event that does not belong to the stream
}

// Fold returns the empty state of a payout stream (payout true) or of a
// payment stream.
func Fold(payout bool) *Folded {
	if payout {
		return &Folded{payout: true, po: newPayout()}
	}
	return &Folded{pay: newPayment()}
}

// FoldFor returns the empty state of the stream delivery in belongs to.
func FoldFor(in delivery.Event) *Folded { return Fold(in.IsPayout()) }

// Len is how many events the state holds.
func (f *Folded) Len() int { return f.n }

// Apply folds one recorded event, the next of the stream.
func (f *Folded) Apply(e Event) error {
	if f.err != nil {
		return f.err
	}
	i := f.n
	f.n++
	if f.payout {
		if err := f.po.apply(e); err != nil {
			f.err = fmt.Errorf("history event %d: %w", i, err)
		}
		return f.err
	}
	switch e.(type) {
	case PayoutPaid, PayoutFailed, PayoutTraced:
		f.err = fmt.Errorf("history event %d (%s) in a payment stream: %w", i, e.Type(), ErrForeignEvent)
		return f.err
	}
	f.pay.apply(e)
	return nil
}

// Decide returns the events delivery in adds to the stream (as Decide on
// the folded history would) and folds them: the state is then the
// stream's with the decision appended.
func (f *Folded) Decide(in delivery.Event) ([]Event, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if in.Ignored() {
		return nil, nil
	}
	if f.err != nil {
		return nil, f.err
	}
	if in.IsPayout() != f.payout {
		return nil, fmt.Errorf("delivery %s on a stream folded for another kind: %w", in.DedupKey, ErrForeignEvent)
	}
	var out []Event
	var err error
	if f.payout {
		out, err = f.po.decide(in)
	} else {
		out, err = f.pay.decide(in)
	}
	if err != nil {
		// decide folds as it emits: what it folded before the error was
		// never recorded.
		f.err = err
		return nil, err
	}
	f.n += len(out)
	return out, nil
}
