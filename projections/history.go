package projections

import (
	"context"
	"fmt"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/projections/views"
)

// PaymentRows reads one payment's read-model row (readmodel.Store).
type PaymentRows interface {
	Payment(ctx context.Context, provider, paymentID string) (views.Payment, bool, error)
}

// StreamReader reads one stream of the configured event store (any
// eventstore.Store).
type StreamReader interface {
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
}

// PaymentHistory is the one query of a payment both front ends show (GET
// /v1/payments/{provider}/{payment_id} and the console's timeline): the
// summary from the payments read model and the events of its stream from
// the event store (none when streams is nil). When the read model does not
// have the payment yet, or is behind the stream (the projector lags), the
// summary is folded from the events with the projection's own fold
// (FoldPayment), so that it is consistent with the events it comes with.
// found is false when neither knows the payment.
func PaymentHistory(ctx context.Context, rows PaymentRows, streams StreamReader, provider, paymentID string) (views.PaymentHistory, bool, error) {
	var h views.PaymentHistory
	p, found, err := rows.Payment(ctx, provider, paymentID)
	if err != nil {
		return h, false, err
	}
	stream := delivery.PaymentStream(provider, paymentID)
	if found {
		stream = p.StreamID
	}
	if streams != nil {
		if h.Events, err = streams.ReadStream(ctx, stream); err != nil {
			return h, false, err
		}
	}
	if n := len(h.Events); n > 0 && (!found || h.Events[n-1].Version > p.Version) {
		if p, found, err = FoldPayment(h.Events); err != nil {
			return h, false, fmt.Errorf("payment %s: %w", stream, err)
		}
	}
	h.Payment = p
	return h, found, nil
}
