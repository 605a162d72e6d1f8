package stripe

import (
	"encoding/json"
	"fmt"

	"github.com/onceledger/onceledger/domain/delivery"
)

// QueryState is what a retrieved PaymentIntent's status says for the
// expectation asker (Stripe's PaymentIntent reference, status).
type QueryState string

const (
	QueryPaid    QueryState = "paid"    // succeeded: a capture
	QueryPending QueryState = "pending" // requires_*, processing: ask again
	QueryClosed  QueryState = "closed"  // canceled: nothing to record, stop
)

// QueryDedupPrefix starts the dedup key (the synthetic event id) of a
// capture learned by asking: one per PaymentIntent; the
// payment_intent.succeeded and charge.succeeded webhooks of the same
// capture (other ids) find the charge already in the payment's stream.
const QueryDedupPrefix = "query_"

// QueryAnswer is a retrieved PaymentIntent as the ledger reads it.
type QueryAnswer struct {
	State QueryState
	Event delivery.Event // the payment_intent.succeeded webhook's fact, when paid
}

// Query reads a PaymentIntent retrieved by id (GET
// /v1/payment_intents/{id}, latest_charge expanded). Stripe signs no API
// answer; one that is not the PaymentIntent asked for is refused
// (ErrNotAsked). A succeeded one becomes the payment_intent.succeeded event
// Stripe would have sent, {"id","object":"event","type","created",
// "data":{"object":…}}, read by the webhook's own normalizer: the capture of
// the latest charge, its fee 0 until charge.succeeded or a report tells it,
// as the webhook carries it. The event is the inbox's raw body, which a
// redrive re-normalizes like a webhook's.
func Query(id string, answer []byte) (QueryAnswer, error) {
	var pi struct {
		ID           string          `json:"id"`
		Object       string          `json:"object"`
		Status       string          `json:"status"`
		Created      int64           `json:"created"`
		LatestCharge json.RawMessage `json:"latest_charge"`
	}
	if err := json.Unmarshal(answer, &pi); err != nil {
		return QueryAnswer{}, fmt.Errorf("%w: PaymentIntent: %v", delivery.ErrMalformed, err)
	}
	if pi.ID != id || pi.Object != "payment_intent" {
		return QueryAnswer{}, fmt.Errorf("%w: asked for %s, answered %s %q", ErrNotAsked, id, pi.Object, pi.ID)
	}
	switch pi.Status {
	case "succeeded":
	case "canceled":
		return QueryAnswer{State: QueryClosed}, nil
	case "requires_payment_method", "requires_confirmation", "requires_action", "processing", "requires_capture":
		return QueryAnswer{State: QueryPending}, nil
	default:
		return QueryAnswer{}, fmt.Errorf("%w: PaymentIntent status %q", delivery.ErrMalformed, pi.Status)
	}
	// The capture happened when its charge was created (the webhook's
	// event is created then too); the PaymentIntent's own created is when
	// checkout began.
	created := pi.Created
	var ch struct {
		Created int64 `json:"created"`
	}
	if json.Unmarshal(pi.LatestCharge, &ch) == nil && ch.Created > 0 {
		created = ch.Created
	}
	raw, err := json.Marshal(map[string]any{"id": QueryDedupPrefix + id, "object": "event", "type": "payment_intent.succeeded",
		"created": created, "data": map[string]json.RawMessage{"object": answer}})
	if err != nil {
		return QueryAnswer{}, err
	}
	ev, err := normalize(raw)
	if err != nil {
		return QueryAnswer{}, err
	}
	return QueryAnswer{State: QueryPaid, Event: ev}, nil
}

// ErrNotAsked: the API answered about another object than the one asked.
var ErrNotAsked = fmt.Errorf("%w: the answer is not the object asked for", delivery.ErrMalformed)
