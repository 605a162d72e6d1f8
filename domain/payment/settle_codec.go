package payment

import (
	"fmt"
	"time"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// Stored JSON shapes of the settlement events (see codec.go for the rules).

type wireLine struct {
	wireMeta
	LineProvider     string `json:"line_provider"`
	Kind             string `json:"kind"`
	SourceType       string `json:"source_type"`
	LineID           string `json:"line_id"`
	LineKey          string `json:"line_key"`
	DedupKeyOfLine   string `json:"line_dedup_key"`
	LinePaymentKey   string `json:"line_payment_key"`
	CaptureID        string `json:"capture_id"`
	RefundID         string `json:"refund_id"`
	DisputeID        string `json:"dispute_id"`
	Gross            int64  `json:"gross"`
	Fee              int64  `json:"fee"`
	Net              int64  `json:"net"`
	Currency         string `json:"currency"`
	OriginalAmount   int64  `json:"original_amount"`
	OriginalCurrency string `json:"original_currency"`
	ExchangeRate     string `json:"exchange_rate"`
	PayoutID         string `json:"payout_id"`
	LineOccurredAt   string `json:"line_occurred_at"`
	AvailableOn      string `json:"available_on"`
	NoWebhook        bool   `json:"no_webhook"`
	BankDebit        bool   `json:"bank_debit,omitempty"`        // absent from events stored before it
	CumulativeRefund bool   `json:"cumulative_refund,omitempty"` // absent from events stored before it
	Counterpart      string `json:"counterpart,omitempty"`       // absent from events stored before it
	Discount         int64  `json:"discount,omitempty"`          // absent from events stored before it
	Reversal         string `json:"reversal,omitempty"`          // absent from events stored before it
}

type wireFeeSettled struct {
	wireMeta
	LineID   string `json:"line_id"`
	Fee      int64  `json:"fee"`
	Currency string `json:"currency"`
}

type wireConverted struct {
	wireMeta
	LineID           string `json:"line_id"`
	OriginalAmount   int64  `json:"original_amount"`
	OriginalCurrency string `json:"original_currency"`
	SettledAmount    int64  `json:"settled_amount"`
	SettledCurrency  string `json:"settled_currency"`
	ExchangeRate     string `json:"exchange_rate"`
}

type wireCaptureReduced struct {
	wireMeta
	CaptureID string `json:"capture_id"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	LineID    string `json:"line_id"`
	Failed    bool   `json:"failed,omitempty"` // absent from events stored before it
}

type wireCounted struct {
	Key string `json:"key"`
	Net int64  `json:"net"`
}

type wirePayoutLines struct {
	wireMeta
	PayoutID string        `json:"payout_id"`
	Currency string        `json:"currency"`
	Lines    []wireCounted `json:"lines"`
}

// toWireLine is a line's stored shape in a LineSettled event: flat beside
// the event's meta, so the line's own provider, key, payment key and time
// take a line_ prefix; its dedup key is stored too, for readers of the raw
// events (it is derived again on decoding).
func toWireLine(m Meta, l settlement.Line) wireLine {
	return wireLine{wireMeta: toWireMeta(m), LineProvider: l.Provider, Kind: string(l.Kind), SourceType: l.SourceType,
		LineID: l.LineID, LineKey: l.Key, DedupKeyOfLine: l.DedupKey(), LinePaymentKey: l.PaymentKey,
		CaptureID: l.CaptureID, RefundID: l.RefundID, DisputeID: l.DisputeID,
		Gross: l.Gross, Fee: l.Fee, Net: l.Net, Currency: string(l.Currency),
		OriginalAmount: l.OriginalAmount, OriginalCurrency: string(l.OriginalCurrency), ExchangeRate: l.ExchangeRate,
		PayoutID: l.PayoutID, LineOccurredAt: fmtTime(l.OccurredAt), AvailableOn: fmtTime(l.AvailableOn), NoWebhook: l.NoWebhook,
		BankDebit: l.BankDebit, CumulativeRefund: l.CumulativeRefund, Counterpart: l.Counterpart, Discount: l.Discount,
		Reversal: l.Reversal}
}

// line is the inverse of toWireLine.
func (w wireLine) line() (settlement.Line, error) {
	l := settlement.Line{Provider: w.LineProvider, Kind: settlement.Kind(w.Kind), SourceType: w.SourceType,
		LineID: w.LineID, Key: w.LineKey, PaymentKey: w.LinePaymentKey,
		CaptureID: w.CaptureID, RefundID: w.RefundID, DisputeID: w.DisputeID,
		Gross: w.Gross, Fee: w.Fee, Net: w.Net, Currency: money.Currency(w.Currency),
		OriginalAmount: w.OriginalAmount, OriginalCurrency: money.Currency(w.OriginalCurrency),
		ExchangeRate: w.ExchangeRate, PayoutID: w.PayoutID, NoWebhook: w.NoWebhook, BankDebit: w.BankDebit,
		CumulativeRefund: w.CumulativeRefund, Counterpart: w.Counterpart, Discount: w.Discount,
		Reversal: w.Reversal}
	var err error
	if l.OccurredAt, err = settleTime(w.LineOccurredAt); err != nil {
		return settlement.Line{}, err
	}
	if l.AvailableOn, err = settleTime(w.AvailableOn); err != nil {
		return settlement.Line{}, err
	}
	return l, nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// encodeSettle encodes the settlement events; ok is false for any other.
func encodeSettle(e Event) (w any, ok bool) {
	switch e := e.(type) {
	case LineSettled:
		return toWireLine(e.Meta, e.Line), true
	case CaptureReduced:
		return wireCaptureReduced{toWireMeta(e.Meta), e.CaptureID, e.Amount, string(e.Currency), e.LineID, e.Failed}, true
	case FeeSettled:
		return wireFeeSettled{toWireMeta(e.Meta), e.LineID, e.Fee, string(e.Currency)}, true
	case PayoutLinesCounted:
		w := wirePayoutLines{wireMeta: toWireMeta(e.Meta), PayoutID: e.PayoutID, Currency: string(e.Currency),
			Lines: make([]wireCounted, len(e.Lines))}
		for i, l := range e.Lines {
			w.Lines[i] = wireCounted{l.Key, l.Net}
		}
		return w, true
	case Converted:
		return wireConverted{toWireMeta(e.Meta), e.LineID, e.OriginalAmount, string(e.OriginalCurrency),
			e.SettledAmount, string(e.SettledCurrency), e.ExchangeRate}, true
	}
	return nil, false
}

// decodeSettle decodes the settlement events; ok is false for another type.
func decodeSettle(typ string, data []byte) (Event, bool, error) {
	var (
		e   Event
		err error
	)
	switch typ {
	case TypeLineSettled:
		var lineErr error // the line's own times, beside wireMeta's
		e, err = decode(typ, data, func(w wireLine, m Meta) Event {
			var l settlement.Line
			l, lineErr = w.line()
			return LineSettled{Meta: m, Line: l}
		})
		if err == nil && lineErr != nil {
			err = fmt.Errorf("decode %s: %w", typ, lineErr)
		}
	case TypeCaptureReduced:
		e, err = decode(typ, data, func(w wireCaptureReduced, m Meta) Event {
			return CaptureReduced{Meta: m, CaptureID: w.CaptureID, Amount: w.Amount, Currency: money.Currency(w.Currency), LineID: w.LineID,
				Failed: w.Failed}
		})
	case TypeFeeSettled:
		e, err = decode(typ, data, func(w wireFeeSettled, m Meta) Event {
			return FeeSettled{Meta: m, LineID: w.LineID, Fee: w.Fee, Currency: money.Currency(w.Currency)}
		})
	case TypeConverted:
		e, err = decode(typ, data, func(w wireConverted, m Meta) Event {
			return Converted{Meta: m, LineID: w.LineID, OriginalAmount: w.OriginalAmount,
				OriginalCurrency: money.Currency(w.OriginalCurrency), SettledAmount: w.SettledAmount,
				SettledCurrency: money.Currency(w.SettledCurrency), ExchangeRate: w.ExchangeRate}
		})
	case TypePayoutLinesCounted:
		e, err = decode(typ, data, func(w wirePayoutLines, m Meta) Event {
			out := PayoutLinesCounted{Meta: m, PayoutID: w.PayoutID, Currency: money.Currency(w.Currency),
				Lines: make([]settlement.Counted, len(w.Lines))}
			for i, l := range w.Lines {
				out.Lines[i] = settlement.Counted{Key: l.Key, Net: l.Net}
			}
			return out
		})
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return e, true, nil
}
