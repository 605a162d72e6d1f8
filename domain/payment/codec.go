package payment

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/domain/money"
)

// ErrUnknownEventType is returned (wrapped) by Encode and Decode for a type
// they do not know.
var ErrUnknownEventType = errors.New("unknown event type")

// The wire structs below are the stored JSON shape of each event: snake_case,
// flat, one struct per type. They are private so that the domain types carry
// no tags and the stored shape changes only here, deliberately. Times are
// RFC 3339 with nanoseconds, in UTC.

type wireMeta struct {
	Provider   string `json:"provider"`
	PaymentKey string `json:"payment_key"`
	DedupKey   string `json:"dedup_key"`
	OccurredAt string `json:"occurred_at"`
}

type wireAuthorized struct {
	wireMeta
	AuthorizationID string `json:"authorization_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
}

type wireCaptured struct {
	wireMeta
	CaptureID string `json:"capture_id"`
	Amount    int64  `json:"amount"`
	Fee       int64  `json:"fee"`
	Currency  string `json:"currency"`
	// Absent from captures written before they existed, and from those
	// without: none had a discount or a sub-merchant.
	Discount    int64  `json:"discount,omitempty"`
	SubMerchant string `json:"sub_merchant,omitempty"`
}

type wireFee struct {
	wireMeta
	CaptureID string `json:"capture_id"`
	Fee       int64  `json:"fee"`
	Currency  string `json:"currency"`
}

type wireReason struct {
	wireMeta
	Reason string `json:"reason"`
}

// wireFailed adds the attempted amount to the failure's shape; both are
// absent from failures written before they existed, and from those whose
// provider reported no amount.
type wireFailed struct {
	wireReason
	Amount   int64  `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
}

type wireRefund struct {
	wireMeta
	RefundID   string `json:"refund_id"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
	WasPending bool   `json:"was_pending"`
	// Total: a cumulative refund's reported total; absent from every refund
	// written before cumulative refunds existed, and from the others.
	Total int64 `json:"cumulative_total,omitempty"`
	// FromLine, Increase: RefundPending's; absent from refunds written
	// before they existed.
	FromLine bool `json:"from_line,omitempty"`
	Increase bool `json:"increase,omitempty"`
	// Discount: the coupon money returned (discount.go); absent from
	// refunds written before it existed, and from those without.
	Discount int64 `json:"discount,omitempty"`
	// MovedTo: RefundPending's and RefundPosted's; absent from every other
	// refund.
	MovedTo string `json:"moved_to,omitempty"`
}

type wireRefundNoted struct {
	wireMeta
	RefundID string `json:"refund_id"`
	Status   string `json:"status"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

type wireDispute struct {
	wireMeta
	DisputeID string `json:"dispute_id"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
}

// wireDisputeLost adds reverses_win to the dispute shape; absent in events
// written before it existed, which were plain losses.
type wireDisputeLost struct {
	wireDispute
	ReversesWin bool `json:"reverses_win"`
}

// wireDisputeWon adds no_funds; absent in events written before it existed,
// which always moved the held amount back.
type wireDisputeWon struct {
	wireDispute
	NoFunds bool `json:"no_funds,omitempty"`
}

type wireDisputeInquiry struct {
	wireDispute
	Reason string `json:"reason"`
}

type wireDisputePending struct {
	wireDispute
	Fact string `json:"fact"`
}

type wirePayoutFailed struct {
	wirePayout
	Reason  string `json:"reason"`
	WasPaid bool   `json:"was_paid"`
}

type wirePayout struct {
	wireMeta
	PayoutID string `json:"payout_id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// wirePayoutPaid is a paid payout with the provider's arrival date, absent
// from events stored before it existed (they decode with none).
type wirePayoutPaid struct {
	wirePayout
	ArrivalDate time.Time `json:"arrival_date,omitzero"`
	TraceID     string    `json:"trace_id,omitempty"`
	Descriptor  string    `json:"statement_descriptor,omitempty"`
}

// wirePayoutTraced is PayoutTraced.
type wirePayoutTraced struct {
	wireMeta
	PayoutID   string `json:"payout_id"`
	TraceID    string `json:"trace_id,omitempty"`
	Descriptor string `json:"statement_descriptor,omitempty"`
}

// wireAction is the shape of an operator's action on an item: the console's
// timeline shows its "actor" and "note".
type wireAction struct {
	wireMeta
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Actor string `json:"actor"`
	Note  string `json:"note"`
}

type wireRecon struct {
	wireMeta
	Kind    string `json:"kind"`
	Key     string `json:"key"`
	Details string `json:"details"`
	// Reported: Flagged only, absent from the events stored before it
	// (and whenever zero).
	Reported int64 `json:"reported,omitempty"`
}

func toWireMeta(m Meta) wireMeta {
	return wireMeta{
		Provider:   m.Provider,
		PaymentKey: m.PaymentKey,
		DedupKey:   m.DedupKey,
		OccurredAt: m.OccurredAt.UTC().Format(time.RFC3339Nano),
	}
}

func (w wireMeta) meta() (Meta, error) {
	t, err := time.Parse(time.RFC3339Nano, w.OccurredAt)
	if err != nil {
		return Meta{}, fmt.Errorf("occurred_at: %w", err)
	}
	return Meta{Provider: w.Provider, PaymentKey: w.PaymentKey, DedupKey: w.DedupKey, OccurredAt: t.UTC()}, nil
}

// Encode returns the stable type name and JSON body of e. Events are values;
// a pointer or a foreign Event implementation wraps ErrUnknownEventType.
func Encode(e Event) (typ string, data []byte, err error) {
	var w any
	switch e := e.(type) {
	case Authorized:
		w = wireAuthorized{toWireMeta(e.Meta), e.AuthorizationID, e.Amount, string(e.Currency)}
	case Captured:
		w = wireCaptured{toWireMeta(e.Meta), e.CaptureID, e.Amount, e.Fee, string(e.Currency), e.Discount, e.SubMerchant}
	case FeeRecorded:
		w = wireFee{toWireMeta(e.Meta), e.CaptureID, e.Fee, string(e.Currency)}
	case Failed:
		w = wireFailed{wireReason{toWireMeta(e.Meta), e.Reason}, e.Amount, string(e.Currency)}
	case Canceled:
		w = wireReason{toWireMeta(e.Meta), e.Reason}
	case RefundPending:
		w = wireRefund{toWireMeta(e.Meta), e.RefundID, e.Amount, string(e.Currency), false, e.Total, e.FromLine, e.Increase, e.Discount, e.MovedTo}
	case RefundPosted:
		w = wireRefund{toWireMeta(e.Meta), e.RefundID, e.Amount, string(e.Currency), e.WasPending, e.Total, e.FromLine, e.Increase, e.Discount, e.MovedTo}
	case RefundReversed:
		w = wireRefund{toWireMeta(e.Meta), e.RefundID, e.Amount, string(e.Currency), e.WasPending, 0, false, false, e.Discount, ""}
	case RefundNoted:
		w = wireRefundNoted{toWireMeta(e.Meta), e.RefundID, e.Status, e.Amount, string(e.Currency)}
	case DisputeOpened:
		w = wireDispute{toWireMeta(e.Meta), e.DisputeID, e.Amount, string(e.Currency)}
	case DisputeWon:
		w = wireDisputeWon{wireDispute{toWireMeta(e.Meta), e.DisputeID, e.Amount, string(e.Currency)}, e.NoFunds}
	case DisputeInquiry:
		w = wireDisputeInquiry{wireDispute{toWireMeta(e.Meta), e.DisputeID, e.Amount, string(e.Currency)}, e.Reason}
	case DisputeFundsWithdrawn:
		w = wireDispute{toWireMeta(e.Meta), e.DisputeID, e.Amount, string(e.Currency)}
	case DisputeFundsReinstated:
		w = wireDispute{toWireMeta(e.Meta), e.DisputeID, e.Amount, string(e.Currency)}
	case DisputePending:
		w = wireDisputePending{wireDispute{toWireMeta(e.Meta), e.DisputeID, e.Amount, string(e.Currency)}, e.Fact}
	case PayoutFailed:
		w = wirePayoutFailed{wirePayout{toWireMeta(e.Meta), e.PayoutID, e.Amount, string(e.Currency)}, e.Reason, e.WasPaid}
	case DisputeLost:
		w = wireDisputeLost{wireDispute{toWireMeta(e.Meta), e.DisputeID, e.Amount, string(e.Currency)}, e.ReversesWin}
	case PayoutPaid:
		w = wirePayoutPaid{wirePayout{toWireMeta(e.Meta), e.PayoutID, e.Amount, string(e.Currency)}, e.ArrivalDate, e.TraceID, e.Descriptor}
	case PayoutTraced:
		w = wirePayoutTraced{toWireMeta(e.Meta), e.PayoutID, e.TraceID, e.Descriptor}
	case Flagged:
		w = wireRecon{toWireMeta(e.Meta), e.Kind, e.Key, e.Details, e.Reported}
	case Cleared:
		w = wireRecon{toWireMeta(e.Meta), e.Kind, e.Key, e.Details, 0}
	case Resolved:
		w = wireAction{toWireMeta(e.Meta), e.Kind, e.Key, e.Actor, e.Note}
	case Reopened:
		w = wireAction{toWireMeta(e.Meta), e.Kind, e.Key, e.Actor, e.Note}
	default:
		var ok bool
		if w, ok = encodeSettle(e); !ok { // settle_codec.go
			if typ, data, ok, err := encodeExtension(e); ok || err != nil { // extension.go
				return typ, data, err
			}
			return "", nil, fmt.Errorf("%w: %T", ErrUnknownEventType, e)
		}
	}
	data, err = json.Marshal(w)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", e.Type(), err)
	}
	return e.Type(), data, nil
}

// Decode is the inverse of Encode; an unknown type is an error wrapping
// ErrUnknownEventType. Unknown JSON fields are ignored, so that events written
// by a newer version with an added field still load.
func Decode(typ string, data []byte) (Event, error) {
	switch typ {
	case TypeAuthorized:
		return decode(typ, data, func(w wireAuthorized, m Meta) Event {
			return Authorized{Meta: m, AuthorizationID: w.AuthorizationID, Amount: w.Amount, Currency: money.Currency(w.Currency)}
		})
	case TypeCaptured:
		return decode(typ, data, func(w wireCaptured, m Meta) Event {
			return Captured{Meta: m, CaptureID: w.CaptureID, Amount: w.Amount, Fee: w.Fee, Currency: money.Currency(w.Currency),
				Discount: w.Discount, SubMerchant: w.SubMerchant}
		})
	case TypeFeeRecorded:
		return decode(typ, data, func(w wireFee, m Meta) Event {
			return FeeRecorded{Meta: m, CaptureID: w.CaptureID, Fee: w.Fee, Currency: money.Currency(w.Currency)}
		})
	case TypeFailed:
		return decode(typ, data, func(w wireFailed, m Meta) Event {
			return Failed{Meta: m, Reason: w.Reason, Amount: w.Amount, Currency: money.Currency(w.Currency)}
		})
	case TypeCanceled:
		return decode(typ, data, func(w wireReason, m Meta) Event { return Canceled{Meta: m, Reason: w.Reason} })
	case TypeRefundPending:
		return decode(typ, data, func(w wireRefund, m Meta) Event {
			return RefundPending{Meta: m, RefundID: w.RefundID, Amount: w.Amount, Currency: money.Currency(w.Currency), Total: w.Total,
				FromLine: w.FromLine, Increase: w.Increase, Discount: w.Discount, MovedTo: w.MovedTo}
		})
	case TypeRefundPosted:
		return decode(typ, data, func(w wireRefund, m Meta) Event {
			return RefundPosted{Meta: m, RefundID: w.RefundID, Amount: w.Amount, Currency: money.Currency(w.Currency), WasPending: w.WasPending,
				Total: w.Total, FromLine: w.FromLine, Increase: w.Increase, Discount: w.Discount, MovedTo: w.MovedTo}
		})
	case TypeRefundNoted:
		return decode(typ, data, func(w wireRefundNoted, m Meta) Event {
			return RefundNoted{Meta: m, RefundID: w.RefundID, Status: w.Status, Amount: w.Amount, Currency: money.Currency(w.Currency)}
		})
	case TypeRefundReversed:
		return decode(typ, data, func(w wireRefund, m Meta) Event {
			return RefundReversed{Meta: m, RefundID: w.RefundID, Amount: w.Amount, Currency: money.Currency(w.Currency), WasPending: w.WasPending,
				Discount: w.Discount}
		})
	case TypeDisputeOpened:
		return decode(typ, data, func(w wireDispute, m Meta) Event {
			return DisputeOpened{Meta: m, DisputeID: w.DisputeID, Amount: w.Amount, Currency: money.Currency(w.Currency)}
		})
	case TypeDisputeWon:
		return decode(typ, data, func(w wireDisputeWon, m Meta) Event {
			return DisputeWon{Meta: m, DisputeID: w.DisputeID, Amount: w.Amount, Currency: money.Currency(w.Currency), NoFunds: w.NoFunds}
		})
	case TypeDisputeInquiry:
		return decode(typ, data, func(w wireDisputeInquiry, m Meta) Event {
			return DisputeInquiry{Meta: m, DisputeID: w.DisputeID, Amount: w.Amount, Currency: money.Currency(w.Currency), Reason: w.Reason}
		})
	case TypeDisputeFundsWithdrawn:
		return decode(typ, data, func(w wireDispute, m Meta) Event {
			return DisputeFundsWithdrawn{Meta: m, DisputeID: w.DisputeID, Amount: w.Amount, Currency: money.Currency(w.Currency)}
		})
	case TypeDisputeFundsReinstated:
		return decode(typ, data, func(w wireDispute, m Meta) Event {
			return DisputeFundsReinstated{Meta: m, DisputeID: w.DisputeID, Amount: w.Amount, Currency: money.Currency(w.Currency)}
		})
	case TypeDisputePending:
		return decode(typ, data, func(w wireDisputePending, m Meta) Event {
			return DisputePending{Meta: m, DisputeID: w.DisputeID, Fact: w.Fact, Amount: w.Amount, Currency: money.Currency(w.Currency)}
		})
	case TypePayoutFailed:
		return decode(typ, data, func(w wirePayoutFailed, m Meta) Event {
			return PayoutFailed{Meta: m, PayoutID: w.PayoutID, Amount: w.Amount, Currency: money.Currency(w.Currency), Reason: w.Reason, WasPaid: w.WasPaid}
		})
	case TypeDisputeLost:
		return decode(typ, data, func(w wireDisputeLost, m Meta) Event {
			return DisputeLost{Meta: m, DisputeID: w.DisputeID, Amount: w.Amount, Currency: money.Currency(w.Currency), ReversesWin: w.ReversesWin}
		})
	case TypePayoutPaid:
		return decode(typ, data, func(w wirePayoutPaid, m Meta) Event {
			return PayoutPaid{Meta: m, PayoutID: w.PayoutID, Amount: w.Amount, Currency: money.Currency(w.Currency), ArrivalDate: w.ArrivalDate,
				TraceID: w.TraceID, Descriptor: w.Descriptor}
		})
	case TypePayoutTraced:
		return decode(typ, data, func(w wirePayoutTraced, m Meta) Event {
			return PayoutTraced{Meta: m, PayoutID: w.PayoutID, TraceID: w.TraceID, Descriptor: w.Descriptor}
		})
	case TypeFlagged:
		return decode(typ, data, func(w wireRecon, m Meta) Event {
			return Flagged{Meta: m, Kind: w.Kind, Key: w.Key, Details: w.Details, Reported: w.Reported}
		})
	case TypeCleared:
		return decode(typ, data, func(w wireRecon, m Meta) Event {
			return Cleared{Meta: m, Kind: w.Kind, Key: w.Key, Details: w.Details}
		})
	case TypeResolved:
		return decode(typ, data, func(w wireAction, m Meta) Event {
			return Resolved{Meta: m, Kind: w.Kind, Key: w.Key, Actor: w.Actor, Note: w.Note}
		})
	case TypeReopened:
		return decode(typ, data, func(w wireAction, m Meta) Event {
			return Reopened{Meta: m, Kind: w.Kind, Key: w.Key, Actor: w.Actor, Note: w.Note}
		})
	}
	if e, ok, err := decodeSettle(typ, data); ok { // settle_codec.go
		return e, err
	}
	if e, ok, err := decodeExtension(typ, data); ok { // extension.go
		return e, err
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownEventType, typ)
}

// metaOf lets decode reach the embedded wireMeta of any wire struct.
type metaOf interface{ wire() wireMeta }

func (w wireMeta) wire() wireMeta { return w }

func decode[W metaOf](typ string, data []byte, build func(W, Meta) Event) (Event, error) {
	var w W
	if !unmarshalFlat(data, &w) { // flatjson.go; else as encoding/json would
		w = *new(W)
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, fmt.Errorf("decode %s: %w", typ, err)
		}
	}
	m, err := w.wire().meta()
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", typ, err)
	}
	return build(w, m), nil
}
