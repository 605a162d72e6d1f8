package stripefake

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The PaymentIntent retrieval, as Stripe's API reference documents it:
// GET /v1/payment_intents/{id}, the PaymentIntent object with status
// requires_payment_method, requires_confirmation, requires_action,
// processing, requires_capture, canceled or succeeded; latest_charge is the
// charge's id, or the Charge object with expand[]=latest_charge; an
// unknown id is 404 resource_missing.

// PaymentIntent is what the double answers about one PaymentIntent id.
type PaymentIntent struct {
	Status   string // "" = resource_missing
	Amount   int64
	Currency string // lower case, as Stripe writes it
	ChargeID string // latest_charge, once there is one
	Created  int64

	// Faults: HTTPStatus answers that status (429 with RetryAfter when
	// set); Delay holds the answer; WrongID answers another object than
	// the one asked for.
	HTTPStatus int
	RetryAfter string
	Delay      time.Duration
	WrongID    bool
}

// SetPaymentIntent makes the double answer p about id.
func (f *Fake) SetPaymentIntent(id string, p PaymentIntent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pis == nil {
		f.pis = map[string]PaymentIntent{}
	}
	f.pis[id] = p
}

// paymentIntent answers GET /v1/payment_intents/{id}; false for another
// path.
func (f *Fake) paymentIntent(w http.ResponseWriter, r *http.Request) bool {
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/payment_intents/")
	if !ok || id == "" || strings.Contains(id, "/") {
		return false
	}
	f.mu.Lock()
	p, known := f.pis[id]
	f.mu.Unlock()
	if p.Delay > 0 {
		select {
		case <-time.After(p.Delay):
		case <-r.Context().Done():
			return true
		}
	}
	switch {
	case p.HTTPStatus != 0:
		if p.RetryAfter != "" {
			w.Header().Set("Retry-After", p.RetryAfter)
		}
		writeError(w, p.HTTPStatus, "api_error", http.StatusText(p.HTTPStatus), "")
		return true
	case !known || p.Status == "":
		writeError(w, http.StatusNotFound, "invalid_request_error", "No such payment_intent: '"+id+"'", "intent")
		return true
	}
	expand := false
	for _, e := range r.URL.Query()["expand[]"] {
		expand = expand || e == "latest_charge"
	}
	obj := map[string]any{"id": id, "object": "payment_intent", "amount": p.Amount, "currency": p.Currency,
		"status": p.Status, "created": p.Created, "livemode": false, "amount_received": 0, "amount_capturable": 0}
	if p.WrongID {
		obj["id"] = id + "_other"
	}
	switch p.Status {
	case "succeeded":
		obj["amount_received"] = p.Amount
	case "requires_capture":
		obj["amount_capturable"] = p.Amount
	}
	if p.ChargeID != "" {
		obj["latest_charge"] = p.ChargeID
		if expand {
			obj["latest_charge"] = map[string]any{"id": p.ChargeID, "object": "charge", "amount": p.Amount,
				"amount_captured": obj["amount_received"], "currency": p.Currency, "payment_intent": id,
				"status":   map[bool]string{true: "succeeded", false: "pending"}[p.Status == "succeeded"],
				"captured": p.Status == "succeeded", "created": p.Created, "balance_transaction": "txn_" + p.ChargeID}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(obj)
	return true
}
