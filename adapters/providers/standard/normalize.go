package standard

import (
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
)

// kinds maps the payload's types to fact kinds, with the field holding each
// fact's business id ("" for facts that need none). The business id, not the
// webhook-id, is what makes the same capture/refund/dispute sent twice under
// different webhook-ids one fact.
var kinds = map[string]struct {
	kind     delivery.Kind
	idField  string
	needsPay bool // amount and currency required
}{
	"payment.authorized": {delivery.KindAuthorized, "", true},
	"payment.captured":   {delivery.KindCaptured, "capture_id", true},
	"payment.failed":     {delivery.KindFailed, "", false},
	"refund.succeeded":   {delivery.KindRefunded, "refund_id", true},
	"dispute.opened":     {delivery.KindDisputeOpened, "dispute_id", true},
	"dispute.won":        {delivery.KindDisputeWon, "dispute_id", true},
	"dispute.lost":       {delivery.KindDisputeLost, "dispute_id", true},
	"payout.paid":        {delivery.KindPayoutPaid, "payout_id", true},
}

func normalize(msgID string, raw []byte) (delivery.Event, error) {
	root, err := payload.DecodeObject(raw)
	if err != nil {
		return delivery.Event{}, err
	}
	typ, err := root.ReqString("type")
	if err != nil {
		return delivery.Event{}, err
	}
	tsText, err := root.ReqString("timestamp")
	if err != nil {
		return delivery.Event{}, err
	}
	occurred, err := payload.RFC3339("timestamp", tsText)
	if err != nil {
		return delivery.Event{}, err
	}
	ev := delivery.Event{
		Provider:    Name,
		DedupKey:    msgID,
		Type:        typ,
		OccurredAt:  occurred,
		PayloadHash: providers.PayloadHash(raw),
		Raw:         raw,
	}
	spec, handled := kinds[typ]
	if !handled {
		// Ignored, raw kept in the inbox; the payment key is best effort.
		if data, ok, _ := root.OptObject("data"); ok {
			ev.PaymentKey, _, _ = data.OptString("payment_id")
		}
		return ev, nil
	}
	data, err := root.ReqObject("data")
	if err != nil {
		return delivery.Event{}, err
	}
	f := delivery.Fact{Kind: spec.kind}
	if spec.kind != delivery.KindPayoutPaid {
		// A payout belongs to no payment; any payment_id on it is ignored.
		if ev.PaymentKey, err = data.ReqString("payment_id"); err != nil {
			return delivery.Event{}, err
		}
	}
	if spec.idField != "" {
		if f.BusinessID, err = data.ReqString(spec.idField); err != nil {
			return delivery.Event{}, err
		}
	}
	if spec.needsPay {
		if f.Amount, err = data.ReqInt("amount"); err != nil {
			return delivery.Event{}, err
		}
		if f.Currency, err = data.ReqCurrency("currency"); err != nil {
			return delivery.Event{}, err
		}
	} else {
		if f.Amount, _, err = data.OptInt("amount"); err != nil {
			return delivery.Event{}, err
		}
		if _, ok := data.Get("currency"); ok {
			if f.Currency, err = data.ReqCurrency("currency"); err != nil {
				return delivery.Event{}, err
			}
		}
	}
	if spec.kind == delivery.KindCaptured {
		// Only a capture carries a fee (CONTRACT: fee optional).
		if f.Fee, _, err = data.OptInt("fee"); err != nil {
			return delivery.Event{}, err
		}
	}
	if s, ok, _ := data.OptString("reason"); ok {
		f.Reason = s
	}
	ev.Facts = []delivery.Fact{f}
	return ev, nil
}
