package standard

import (
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/provider"
)

// kinds maps the payload's types to fact kinds, with the field holding each
// fact's business id ("" for facts that need none). The business id, not the
// webhook-id, is what makes the same capture/refund/dispute sent twice under
// different webhook-ids one fact.
var kinds = map[string]struct {
	kind     provider.Kind
	idField  string
	needsPay bool // amount and currency required
}{
	"payment.authorized": {provider.KindAuthorized, "", true},
	"payment.captured":   {provider.KindCaptured, "capture_id", true},
	"payment.failed":     {provider.KindFailed, "", false},
	"refund.succeeded":   {provider.KindRefunded, "refund_id", true},
	"dispute.opened":     {provider.KindDisputeOpened, "dispute_id", true},
	"dispute.won":        {provider.KindDisputeWon, "dispute_id", true},
	"dispute.lost":       {provider.KindDisputeLost, "dispute_id", true},
	"payout.paid":        {provider.KindPayoutPaid, "payout_id", true},
}

func normalize(msgID string, raw []byte) (provider.Event, error) {
	root, err := payload.DecodeObject(raw)
	if err != nil {
		return provider.Event{}, err
	}
	typ, err := root.ReqString("type")
	if err != nil {
		return provider.Event{}, err
	}
	tsText, err := root.ReqString("timestamp")
	if err != nil {
		return provider.Event{}, err
	}
	occurred, err := payload.RFC3339("timestamp", tsText)
	if err != nil {
		return provider.Event{}, err
	}
	ev := provider.Event{
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
		return provider.Event{}, err
	}
	f := provider.Fact{Kind: spec.kind}
	if spec.kind != provider.KindPayoutPaid {
		// A payout belongs to no payment; any payment_id on it is ignored.
		if ev.PaymentKey, err = data.ReqString("payment_id"); err != nil {
			return provider.Event{}, err
		}
	}
	if spec.idField != "" {
		if f.BusinessID, err = data.ReqString(spec.idField); err != nil {
			return provider.Event{}, err
		}
	}
	if spec.needsPay {
		if f.Amount, err = data.ReqInt("amount"); err != nil {
			return provider.Event{}, err
		}
		if f.Currency, err = data.ReqCurrency("currency"); err != nil {
			return provider.Event{}, err
		}
	} else {
		if f.Amount, _, err = data.OptInt("amount"); err != nil {
			return provider.Event{}, err
		}
		if _, ok := data.Get("currency"); ok {
			if f.Currency, err = data.ReqCurrency("currency"); err != nil {
				return provider.Event{}, err
			}
		}
	}
	if spec.kind == provider.KindCaptured {
		// Only a capture carries a fee (CONTRACT: fee optional).
		if f.Fee, _, err = data.OptInt("fee"); err != nil {
			return provider.Event{}, err
		}
	}
	if s, ok, _ := data.OptString("reason"); ok {
		f.Reason = s
	}
	ev.Facts = []provider.Fact{f}
	return ev, nil
}
