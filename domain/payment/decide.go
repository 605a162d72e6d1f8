package payment

import (
	"errors"

	"github.com/onceledger/onceledger/domain/delivery"
)

// ErrForeignEvent is returned by Decide when the history holds an event that
// belongs to the other aggregate (a payout event in a payment stream or the
// reverse): the caller loaded the wrong stream.
var ErrForeignEvent = errors.New("event does not belong to this stream")

// Decide folds history (the stream's events, in order) and returns the events
// that the delivery in adds. It dispatches to the payout aggregate when in is a
// payout. An empty result means the delivery adds nothing new (its facts were
// already recorded). Pure: no clock, no ids.
//
// An invalid delivery (delivery.Event.Validate) is an error; so is a history
// that does not belong to the delivery's kind of stream.
func Decide(history []Event, in delivery.Event) ([]Event, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if in.Ignored() {
		return nil, nil
	}
	f := FoldFor(in)
	for _, e := range history {
		if err := f.Apply(e); err != nil {
			return nil, err
		}
	}
	return f.Decide(in)
}
