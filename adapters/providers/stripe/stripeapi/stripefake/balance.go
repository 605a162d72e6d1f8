package stripefake

import (
	"encoding/json"
	"net/http"
	"strings"
)

// BalanceAmount is one entry of the Balance object's available or pending
// lists: an amount in Stripe's units for the currency, lower-case code.
type BalanceAmount struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// SetBalance sets what GET /v1/balance answers: the Balance object
// (https://docs.stripe.com/api/balance/balance_object: "object":
// "balance", available and pending, each a list of amounts per currency
// with their source_types).
func (f *Fake) SetBalance(available, pending []BalanceAmount) {
	type entry struct {
		BalanceAmount
		SourceTypes map[string]int64 `json:"source_types"`
	}
	conv := func(in []BalanceAmount) []entry {
		out := make([]entry, len(in))
		for i, a := range in {
			a.Currency = strings.ToLower(a.Currency)
			out[i] = entry{a, map[string]int64{"card": a.Amount}}
		}
		return out
	}
	b, _ := json.Marshal(map[string]any{"object": "balance", "available": conv(available), "pending": conv(pending),
		"livemode": false})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.balance = b
}

func (f *Fake) serveBalance(w http.ResponseWriter) {
	f.mu.Lock()
	b := f.balance
	f.mu.Unlock()
	if b == nil {
		b = []byte(`{"object":"balance","available":[],"pending":[],"livemode":false}`)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
