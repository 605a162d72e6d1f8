package payment

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
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
		Flagged{Meta: m, Kind: ReconOverRefund, Key: "refunds", Details: "refunds exceed captures"},
		Cleared{Meta: m, Kind: ReconOverRefund, Key: "refunds", Details: "captures caught up"},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range allEvents() {
		typ, data, err := Encode(e)
		if err != nil {
			t.Fatalf("Encode(%T): %v", e, err)
		}
		if typ != e.Type() {
			t.Errorf("Encode(%T) type %q, want %q", e, typ, e.Type())
		}
		seen[typ] = true
		back, err := Decode(typ, data)
		if err != nil {
			t.Fatalf("Decode(%s, %s): %v", typ, data, err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Errorf("%s round trip:\n got %#v\nwant %#v", typ, back, e)
		}
	}
	for _, typ := range []string{TypeAuthorized, TypeCaptured, TypeFeeRecorded, TypeFailed, TypeCanceled, TypeRefundPending,
		TypeRefundPosted, TypeRefundReversed, TypeDisputeOpened, TypeDisputeWon, TypeDisputeLost,
		TypePayoutPaid, TypeFlagged, TypeCleared} {
		if !seen[typ] {
			t.Errorf("type %s not covered", typ)
		}
	}
}

func TestCodecWireShape(t *testing.T) {
	_, data, err := Encode(Captured{
		Meta:      Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1", OccurredAt: t0},
		CaptureID: "ch_1", Amount: 1000, Fee: 30, Currency: "USD",
	})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"provider": "stripe", "payment_key": "pi_1", "dedup_key": "evt_1",
		"occurred_at": "2026-11-29T10:00:00.123456789Z",
		"capture_id":  "ch_1", "amount": float64(1000), "fee": float64(30), "currency": "USD",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("wire shape %v, want %v", got, want)
	}
}

func TestCodecTimesInUTC(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	e := Failed{Meta: Meta{DedupKey: "k", OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, paris)}}
	typ, data, err := Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(typ, data)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Metadata().OccurredAt; !got.Equal(e.OccurredAt) || got.Location() != time.UTC {
		t.Fatalf("occurred_at %v", got)
	}
}

type strangeEvent struct{ Meta }

func (strangeEvent) Type() string { return "strange" }

func TestCodecErrors(t *testing.T) {
	if _, err := Decode("payment.exploded", []byte(`{}`)); !errors.Is(err, ErrUnknownEventType) {
		t.Errorf("unknown type: %v", err)
	}
	if _, _, err := Encode(strangeEvent{}); !errors.Is(err, ErrUnknownEventType) {
		t.Errorf("foreign event: %v", err)
	}
	if _, _, err := Encode(&Captured{}); !errors.Is(err, ErrUnknownEventType) {
		t.Errorf("pointer event: %v", err)
	}
	if _, err := Decode(TypeCaptured, []byte(`{"amount":"ten"}`)); err == nil || errors.Is(err, ErrUnknownEventType) {
		t.Errorf("bad body: %v", err)
	}
	if _, err := Decode(TypeCaptured, []byte(`{"occurred_at":"yesterday"}`)); err == nil {
		t.Error("bad time accepted")
	}
	// Fields added by a newer version are ignored, not fatal.
	e, err := Decode(TypeFailed, []byte(`{"dedup_key":"k","occurred_at":"2026-01-01T00:00:00Z","reason":"x","new_field":1}`))
	if err != nil || e.(Failed).Reason != "x" {
		t.Errorf("unknown field: %v %v", e, err)
	}
}

// Losses stored before reverses_win existed were plain losses.
func TestCodecDisputeLostWithoutReversesWin(t *testing.T) {
	e, err := Decode(TypeDisputeLost, []byte(`{"dedup_key":"k","occurred_at":"2026-01-01T00:00:00Z","dispute_id":"du_1","amount":5,"currency":"USD"}`))
	if err != nil {
		t.Fatal(err)
	}
	if l := e.(DisputeLost); l.ReversesWin || l.Amount != 5 || l.DisputeID != "du_1" {
		t.Fatalf("got %+v", l)
	}
	_, data, err := Encode(DisputeLost{Meta: Meta{OccurredAt: t0}, DisputeID: "du_1", Amount: 5, Currency: "USD", ReversesWin: true})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil || got["reverses_win"] != true || got["dispute_id"] != "du_1" {
		t.Fatalf("wire shape %s: %v", data, err)
	}
}
