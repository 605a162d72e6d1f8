package outbound

import (
	"sort"

	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/settlement"
)

// paymentData is the public data of a payment-package event: business ids,
// amounts in minor units with amount_decimal beside them, and what the fact
// says, in public field names (docs/events.md). Internal bookkeeping (dedup
// keys, was_pending flags as stored) is not exposed as such.
func paymentData(e payment.Event) map[string]any {
	switch e := e.(type) {
	case payment.Authorized:
		return amounts(map[string]any{"authorization_id": e.AuthorizationID}, e.Amount, e.Currency)
	case payment.Captured:
		return amounts(map[string]any{"capture_id": e.CaptureID, "fee": e.Fee}, e.Amount, e.Currency)
	case payment.FeeRecorded:
		return amounts(map[string]any{"capture_id": e.CaptureID, "fee": e.Fee}, e.Fee, e.Currency)
	case payment.CaptureReduced:
		return amounts(map[string]any{"capture_id": e.CaptureID, "line_id": e.LineID}, e.Amount, e.Currency)
	case payment.Failed:
		if e.Currency != "" { // the attempted amount, when the provider reported it
			return amounts(map[string]any{"reason": e.Reason}, e.Amount, e.Currency)
		}
		return map[string]any{"reason": e.Reason}
	case payment.Canceled:
		return map[string]any{"reason": e.Reason}
	case payment.RefundPending:
		return amounts(movedTo(map[string]any{"refund_id": e.RefundID}, e.MovedTo), e.Amount, e.Currency)
	case payment.RefundPosted:
		return amounts(movedTo(map[string]any{"refund_id": e.RefundID, "was_pending": e.WasPending}, e.MovedTo), e.Amount, e.Currency)
	case payment.RefundReversed:
		return amounts(map[string]any{"refund_id": e.RefundID, "was_pending": e.WasPending}, e.Amount, e.Currency)
	case payment.DisputeOpened:
		return amounts(map[string]any{"dispute_id": e.DisputeID}, e.Amount, e.Currency)
	case payment.DisputeInquiry:
		return amounts(map[string]any{"dispute_id": e.DisputeID, "reason": e.Reason}, e.Amount, e.Currency)
	case payment.DisputeFundsWithdrawn:
		return amounts(map[string]any{"dispute_id": e.DisputeID}, e.Amount, e.Currency)
	case payment.DisputeFundsReinstated:
		return amounts(map[string]any{"dispute_id": e.DisputeID}, e.Amount, e.Currency)
	case payment.DisputePending:
		return amounts(map[string]any{"dispute_id": e.DisputeID, "fact": e.Fact}, e.Amount, e.Currency)
	case payment.DisputeWon:
		return amounts(map[string]any{"dispute_id": e.DisputeID, "no_funds": e.NoFunds}, e.Amount, e.Currency)
	case payment.DisputeLost:
		return amounts(map[string]any{"dispute_id": e.DisputeID, "reverses_win": e.ReversesWin}, e.Amount, e.Currency)
	case payment.PayoutPaid:
		return amounts(map[string]any{"payout_id": e.PayoutID}, e.Amount, e.Currency)
	case payment.PayoutTraced:
		return map[string]any{"payout_id": e.PayoutID, "trace_id": e.TraceID, "statement_descriptor": e.Descriptor}
	case payment.PayoutFailed:
		return amounts(map[string]any{"payout_id": e.PayoutID, "reason": e.Reason, "was_paid": e.WasPaid}, e.Amount, e.Currency)
	case payment.Flagged: // details as every reader may see them (a subscription's URL is not)
		return map[string]any{"kind": e.Kind, "key": e.Key, "details": payment.PublicDetails(e.Kind, e.Key, e.Details)}
	case payment.Cleared:
		return map[string]any{"kind": e.Kind, "key": e.Key, "details": payment.PublicDetails(e.Kind, e.Key, e.Details)}
	case payment.Resolved:
		return map[string]any{"kind": e.Kind, "key": e.Key, "actor": e.Actor, "note": e.Note}
	case payment.Reopened:
		return map[string]any{"kind": e.Kind, "key": e.Key, "actor": e.Actor, "note": e.Note}
	}
	return settleData(e)
}

// settleData is paymentData for the settlement events.
func settleData(e payment.Event) map[string]any {
	switch e := e.(type) {
	case payment.LineSettled:
		return lineData(e.Line)
	case payment.FeeSettled:
		return amounts(map[string]any{"line_id": e.LineID, "fee": e.Fee}, e.Fee, e.Currency)
	case payment.Converted:
		d := amounts(map[string]any{"line_id": e.LineID, "exchange_rate": e.ExchangeRate}, e.SettledAmount, e.SettledCurrency)
		if e.OriginalCurrency != "" {
			d["original_amount"], d["original_currency"] = e.OriginalAmount, string(e.OriginalCurrency)
		}
		return d
	case payment.PayoutLinesCounted:
		lines := make([]map[string]any, len(e.Lines))
		for i, l := range e.Lines {
			lines[i] = map[string]any{"key": l.Key, "net": l.Net}
		}
		return map[string]any{"payout_id": e.PayoutID, "currency": string(e.Currency), "lines": lines}
	}
	return nil // FromRecorded: unmapped
}

// lineData is one settlement line: gross is the amount; fee and net beside.
func lineData(l settlement.Line) map[string]any {
	d := amounts(map[string]any{
		"kind": string(l.Kind), "source_type": l.SourceType, "line_id": l.LineID,
		"fee": l.Fee, "net": l.Net, "payout_id": l.PayoutID, "no_webhook": l.NoWebhook,
	}, l.Gross, l.Currency)
	// counterpart: on an adjustment line, the account its net moved
	// against the provider balance (reserve, bank); absent otherwise.
	for k, v := range map[string]string{"capture_id": l.CaptureID, "refund_id": l.RefundID, "dispute_id": l.DisputeID,
		"exchange_rate": l.ExchangeRate, "counterpart": l.Counterpart} {
		if v != "" {
			d[k] = v
		}
	}
	if l.OriginalCurrency != "" {
		d["original_amount"], d["original_currency"] = l.OriginalAmount, string(l.OriginalCurrency)
	}
	if !l.AvailableOn.IsZero() {
		d["available_on"] = l.AvailableOn.UTC()
	}
	return d
}

func sortStrings(s []string) { sort.Strings(s) }

// movedTo adds moved_to to a refund's data when the refund's amount is a
// part moved to an earlier refund (payment.RefundPosted.MovedTo); absent
// otherwise, so that every other refund's data is unchanged.
func movedTo(d map[string]any, to string) map[string]any {
	if to != "" {
		d["moved_to"] = to
	}
	return d
}
