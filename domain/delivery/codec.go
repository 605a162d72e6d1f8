package delivery

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/domain/bankline"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// The stored form of a normalized delivery: the inbox keeps it beside the
// raw bytes (webhook_inbox.normalized), so that a row can be re-driven (the
// sweeper, the IPN verifier, `onceledger redrive`) without parsing the
// provider's payload again, possibly with other code. Rows written years
// ago are decoded by today's code, so every key below is a stored name:
// renaming a Go field must not rename it (the golden files in
// testdata/normalized hold the stored shapes). The payload hash and the raw
// bytes have columns of their own and are not part of it.

type wireEvent struct {
	Provider   string     `json:"provider"`
	DedupKey   string     `json:"dedup_key"`
	Type       string     `json:"type"`
	PaymentKey string     `json:"payment_key,omitempty"`
	OccurredAt time.Time  `json:"occurred_at"`
	Facts      []wireFact `json:"facts"`
	// SubMerchant: absent from rows written before it existed.
	SubMerchant string `json:"sub_merchant,omitempty"`
	// References: absent from rows written before they existed, and from
	// deliveries that name none.
	References []string `json:"references,omitempty"`
}

type wireFact struct {
	Kind       string `json:"kind"`
	BusinessID string `json:"business_id,omitempty"`
	Amount     int64  `json:"amount"`
	Fee        int64  `json:"fee,omitempty"`
	Discount   int64  `json:"discount,omitempty"`
	Currency   string `json:"currency,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Settlement: a report line, in its own stored names (settlement.Line's
	// tags), so that a line's row is re-driven like a webhook's.
	Settlement *settlement.Line `json:"settlement,omitempty"`
	// Counted: a payout-lines delivery's lines (settlement.Counted's tags).
	Counted []settlement.Counted `json:"counted,omitempty"`
	// LegacyID: absent from rows written before it existed.
	LegacyID string `json:"legacy_id,omitempty"`
	// Bank: a bank delivery's input, in bankline's stored names.
	Bank *bankline.Input `json:"bank,omitempty"`
	// ArrivalDate: a paid payout's arrival date (Fact.ArrivalDate).
	ArrivalDate time.Time `json:"arrival_date,omitzero"`
	// TraceID, Descriptor: a paid payout's (Fact.TraceID, Fact.Descriptor).
	TraceID    string `json:"trace_id,omitempty"`
	Descriptor string `json:"statement_descriptor,omitempty"`
}

// EncodeNormalized returns the stored form of e's normalized delivery: its
// envelope and facts, without the payload hash and the raw bytes.
func EncodeNormalized(e Event) ([]byte, error) {
	w := wireEvent{Provider: e.Provider, DedupKey: e.DedupKey, Type: e.Type,
		PaymentKey: e.PaymentKey, OccurredAt: e.OccurredAt, Facts: make([]wireFact, len(e.Facts)),
		SubMerchant: e.SubMerchant, References: e.References}
	for i, f := range e.Facts {
		w.Facts[i] = wireFact{Kind: string(f.Kind), BusinessID: f.BusinessID, Amount: f.Amount, Fee: f.Fee, Discount: f.Discount,
			Currency: string(f.Currency), Reason: f.Reason, Settlement: f.Settlement, Counted: f.Counted, LegacyID: f.LegacyID,
			ArrivalDate: f.ArrivalDate, Bank: f.Bank, TraceID: f.TraceID, Descriptor: f.Descriptor}
	}
	return json.Marshal(w)
}

// DecodeNormalized is the inverse of EncodeNormalized: the delivery without
// its payload hash and raw bytes (the inbox's columns hold those). An
// ignored delivery's facts decode as nil. Unknown keys are ignored, so a
// row written by a newer version still loads.
func DecodeNormalized(b []byte) (Event, error) {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, fmt.Errorf("decode normalized delivery: %w", err)
	}
	e := Event{Provider: w.Provider, DedupKey: w.DedupKey, Type: w.Type, PaymentKey: w.PaymentKey, OccurredAt: w.OccurredAt,
		SubMerchant: w.SubMerchant, References: w.References}
	for _, f := range w.Facts {
		e.Facts = append(e.Facts, Fact{Kind: Kind(f.Kind), BusinessID: f.BusinessID, Amount: f.Amount, Fee: f.Fee, Discount: f.Discount,
			Currency: money.Currency(f.Currency), Reason: f.Reason, Settlement: f.Settlement, Counted: f.Counted,
			LegacyID: f.LegacyID, ArrivalDate: f.ArrivalDate, Bank: f.Bank, TraceID: f.TraceID, Descriptor: f.Descriptor})
	}
	return e, nil
}
