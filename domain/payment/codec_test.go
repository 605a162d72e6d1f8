package payment

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allEvents has one event of every type with every field set, so that a
// field the codec forgets shows up as a round-trip difference.
func allEvents() []Event {
	m := Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1", OccurredAt: t0}
	return []Event{
		Authorized{Meta: m, AuthorizationID: "auth_1", Amount: 1000, Currency: "USD"},
		Captured{Meta: m, CaptureID: "ch_1", Amount: 1000, Fee: 30, Currency: "USD"},
		FeeRecorded{Meta: m, CaptureID: "ch_1", Fee: 117, Currency: "USD"},
		Failed{Meta: m, Reason: "card_declined"},
		Canceled{Meta: m, Reason: "requested_by_customer"},
		RefundPending{Meta: m, RefundID: "re_1", Amount: 100, Currency: "USD"},
		RefundPosted{Meta: m, RefundID: "re_1", Amount: 100, Currency: "USD", WasPending: true},
		RefundReversed{Meta: m, RefundID: "re_1", Amount: 100, Currency: "USD", WasPending: true},
		DisputeOpened{Meta: m, DisputeID: "du_1", Amount: 500, Currency: "USD"},
		DisputeWon{Meta: m, DisputeID: "du_1", Amount: 500, Currency: "USD"},
		DisputeLost{Meta: m, DisputeID: "du_1", Amount: 500, Currency: "USD", ReversesWin: true},
		DisputeLost{Meta: m, DisputeID: "du_2", Amount: 500, Currency: "USD"},
		PayoutPaid{Meta: Meta{Provider: "stripe", PaymentKey: "po_1", DedupKey: "evt_2", OccurredAt: t0}, PayoutID: "po_1", Amount: 9000, Currency: "USD"},
		PayoutTraced{Meta: Meta{Provider: "stripe", PaymentKey: "po_1", DedupKey: "evt_3", OccurredAt: t0}, PayoutID: "po_1",
			TraceID: "091000015550001", Descriptor: "ACME PAYOUT"},
		Flagged{Meta: m, Kind: ReconOverRefund, Key: "refunds", Details: "refunds exceed captures"},
		Cleared{Meta: m, Kind: ReconOverRefund, Key: "refunds", Details: "captures caught up"},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range allEvents() {
		typ, data, err := Encode(e)
		require.NoErrorf(t, err, "Encode(%T)", e)
		assert.Equalf(t, e.Type(), typ, "Encode(%T) type", e)
		seen[typ] = true
		back, err := Decode(typ, data)
		require.NoErrorf(t, err, "Decode(%s, %s)", typ, data)
		assert.Equalf(t, e, back, "%s round trip", typ)
	}
	for _, typ := range []string{TypeAuthorized, TypeCaptured, TypeFeeRecorded, TypeFailed, TypeCanceled, TypeRefundPending,
		TypeRefundPosted, TypeRefundReversed, TypeDisputeOpened, TypeDisputeWon, TypeDisputeLost,
		TypePayoutPaid, TypeFlagged, TypeCleared} {
		assert.Truef(t, seen[typ], "type %s not covered", typ)
	}
}

func TestCodecWireShape(t *testing.T) {
	_, data, err := Encode(Captured{
		Meta:      Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1", OccurredAt: t0},
		CaptureID: "ch_1", Amount: 1000, Fee: 30, Currency: "USD",
	})
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(data, &got))
	want := map[string]any{
		"provider": "stripe", "payment_key": "pi_1", "dedup_key": "evt_1",
		"occurred_at": "2026-11-29T10:00:00.123456789Z",
		"capture_id":  "ch_1", "amount": float64(1000), "fee": float64(30), "currency": "USD",
	}
	require.Equal(t, want, got, "wire shape")
}

func TestCodecTimesInUTC(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	e := Failed{Meta: Meta{DedupKey: "k", OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, paris)}}
	typ, data, err := Encode(e)
	require.NoError(t, err)
	back, err := Decode(typ, data)
	require.NoError(t, err)
	got := back.Metadata().OccurredAt
	require.Truef(t, got.Equal(e.OccurredAt), "occurred_at %v, want %v", got, e.OccurredAt)
	require.Samef(t, time.UTC, got.Location(), "occurred_at %v is not in UTC", got)
}

type strangeEvent struct{ Meta }

func (strangeEvent) Type() string { return "strange" }

func TestCodecErrors(t *testing.T) {
	_, err := Decode("payment.exploded", []byte(`{}`))
	assert.ErrorIs(t, err, ErrUnknownEventType, "unknown type")
	_, _, err = Encode(strangeEvent{})
	assert.ErrorIs(t, err, ErrUnknownEventType, "foreign event")
	_, _, err = Encode(&Captured{})
	assert.ErrorIs(t, err, ErrUnknownEventType, "pointer event")
	_, err = Decode(TypeCaptured, []byte(`{"amount":"ten"}`))
	if assert.Error(t, err, "bad body") {
		assert.NotErrorIs(t, err, ErrUnknownEventType, "bad body")
	}
	_, err = Decode(TypeCaptured, []byte(`{"occurred_at":"yesterday"}`))
	assert.Error(t, err, "bad time accepted")
	// Fields added by a newer version are ignored, not fatal.
	e, err := Decode(TypeFailed, []byte(`{"dedup_key":"k","occurred_at":"2026-01-01T00:00:00Z","reason":"x","new_field":1}`))
	if assert.NoError(t, err, "unknown field") {
		assert.Equalf(t, "x", e.(Failed).Reason, "unknown field: %v", e)
	}
}

// Losses stored before reverses_win existed were plain losses.
func TestCodecDisputeLostWithoutReversesWin(t *testing.T) {
	e, err := Decode(TypeDisputeLost, []byte(`{"dedup_key":"k","occurred_at":"2026-01-01T00:00:00Z","dispute_id":"du_1","amount":5,"currency":"USD"}`))
	require.NoError(t, err)
	l := e.(DisputeLost)
	require.Falsef(t, l.ReversesWin, "got %+v", l)
	require.Equalf(t, int64(5), l.Amount, "got %+v", l)
	require.Equalf(t, "du_1", l.DisputeID, "got %+v", l)
	_, data, err := Encode(DisputeLost{Meta: Meta{OccurredAt: t0}, DisputeID: "du_1", Amount: 5, Currency: "USD", ReversesWin: true})
	require.NoError(t, err)
	var got map[string]any
	require.NoErrorf(t, json.Unmarshal(data, &got), "wire shape %s", data)
	require.Equalf(t, true, got["reverses_win"], "wire shape %s", data)
	require.Equalf(t, "du_1", got["dispute_id"], "wire shape %s", data)
}
