package projections

import (
	"bytes"
	"encoding/json"

	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// Kinds of business id in payment_ids: what an id names in its payment.
const (
	IDAuthorization  = "authorization"
	IDCapture        = "capture"
	IDRefund         = "refund"
	IDDispute        = "dispute"
	IDSettlementLine = "settlement_line"
	// IDMerchantReference: the merchant's own id of the payment or a
	// refund (Alipay and WeChat Pay out_trade_no, out_refund_no, Adyen
	// merchantReference, PayPal order id), from the delivery's metadata.
	IDMerchantReference = "merchant_reference"
)

// paymentIDs are the business ids the batch's events of payment streams
// (seen) carry, once each: the console's search finds a payment by any of
// them (readmodel.SearchPayments). Every event of the batch counts, those
// the payments row has already folded too (a replay from the start fills
// the index of payments recorded before it existed; migration 00082). The
// payment's own id is the payments row's, not repeated here.
func paymentIDs(batch []Envelope, seen map[string]bool) []views.PaymentID {
	var out []views.PaymentID
	have := map[views.PaymentID]bool{}
	for _, env := range batch {
		stream := env.Recorded.StreamID
		if !seen[stream] {
			continue
		}
		if env.Event == nil {
			continue
		}
		own := env.Event.Metadata().PaymentKey
		for _, id := range append(businessIDs(env.Event), references(env.Recorded.Metadata)...) {
			if id.BusinessID == "" || id.BusinessID == own {
				continue
			}
			id.StreamID = stream
			if !have[id] {
				have[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// businessIDs are the ids one event names, by kind.
func businessIDs(e payment.Event) []views.PaymentID {
	id := func(kind, v string) views.PaymentID { return views.PaymentID{BusinessID: v, Kind: kind} }
	switch e := e.(type) {
	case payment.Authorized:
		return []views.PaymentID{id(IDAuthorization, e.AuthorizationID)}
	case payment.Captured:
		return []views.PaymentID{id(IDCapture, e.CaptureID)}
	case payment.FeeRecorded:
		return []views.PaymentID{id(IDCapture, e.CaptureID)}
	case payment.CaptureReduced:
		return []views.PaymentID{id(IDCapture, e.CaptureID)}
	case payment.RefundPending:
		return []views.PaymentID{id(IDRefund, e.RefundID)}
	case payment.RefundPosted:
		return []views.PaymentID{id(IDRefund, e.RefundID)}
	case payment.RefundReversed:
		return []views.PaymentID{id(IDRefund, e.RefundID)}
	case payment.RefundNoted:
		return []views.PaymentID{id(IDRefund, e.RefundID)}
	case payment.DisputeOpened:
		return []views.PaymentID{id(IDDispute, e.DisputeID)}
	case payment.DisputeInquiry:
		return []views.PaymentID{id(IDDispute, e.DisputeID)}
	case payment.DisputeFundsWithdrawn:
		return []views.PaymentID{id(IDDispute, e.DisputeID)}
	case payment.DisputeWon:
		return []views.PaymentID{id(IDDispute, e.DisputeID)}
	case payment.DisputeLost:
		return []views.PaymentID{id(IDDispute, e.DisputeID)}
	case payment.LineSettled:
		l := e.Line
		return []views.PaymentID{id(IDSettlementLine, l.LineID), id(IDCapture, l.CaptureID), id(IDRefund, l.RefundID),
			id(IDDispute, l.DisputeID)}
	}
	return nil
}

// references are the merchant's ids a delivery named, as the ingest
// recorded them in its events' metadata ("references"; none in events
// recorded before, or not from a delivery).
func references(metadata []byte) []views.PaymentID {
	if !bytes.Contains(metadata, []byte(`"references"`)) {
		return nil
	}
	var m struct {
		References []string `json:"references"`
	}
	if json.Unmarshal(metadata, &m) != nil {
		return nil
	}
	out := make([]views.PaymentID, len(m.References))
	for i, r := range m.References {
		out[i] = views.PaymentID{BusinessID: r, Kind: IDMerchantReference}
	}
	return out
}
