package askers

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi"
)

// Stripe asks GET /v1/payment_intents/{id} (latest charge expanded): the
// expected payment's reference is the PaymentIntent id.
type Stripe struct {
	Client *stripeapi.Client
}

var _ expectations.Asker = Stripe{}

// Ask implements expectations.Asker: succeeded is paid, requires_* and
// processing ask again, canceled stops, 404 asks again (the PaymentIntent
// may be created after the order was registered). Stripe signs no API
// answer: one that is not the PaymentIntent asked for is treated as
// forged.
func (s Stripe) Ask(ctx context.Context, id string) (expectations.Answer, error) {
	raw, err := s.Client.PaymentIntent(ctx, id)
	var apiErr *stripeapi.APIError
	var rl *stripeapi.RateLimitedError
	switch {
	case errors.As(err, &rl):
		return expectations.Answer{}, &expectations.RetryAfterError{After: rl.RetryAfter, Err: err}
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound:
		return expectations.Answer{Outcome: expectations.OutcomeNotExist}, nil
	case err != nil:
		return expectations.Answer{}, err
	}
	q, err := stripe.Query(id, raw)
	switch {
	case errors.Is(err, stripe.ErrNotAsked):
		return expectations.Answer{}, fmt.Errorf("%w: %w", expectations.ErrForged, err)
	case err != nil:
		return expectations.Answer{}, err
	}
	switch q.State {
	case stripe.QueryPaid:
		return expectations.Answer{Outcome: expectations.OutcomePaid, Event: q.Event}, nil
	case stripe.QueryClosed:
		return expectations.Answer{Outcome: expectations.OutcomeClosed}, nil
	}
	return expectations.Answer{Outcome: expectations.OutcomePending}, nil
}
