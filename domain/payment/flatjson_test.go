package payment

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agree checks the fast path against encoding/json on one input for wire
// type W: whatever the fast path accepts, encoding/json decodes without
// error into the same value. It reports whether the fast path accepted.
func agree[W any](t *testing.T, data string) bool {
	t.Helper()
	var fast, slow W
	ok := unmarshalFlat([]byte(data), &fast)
	err := json.Unmarshal([]byte(data), &slow)
	if ok {
		require.NoError(t, err, "the fast path accepted what encoding/json refuses: %s", data)
		require.Equal(t, slow, fast, "the fast path decoded differently: %s", data)
	}
	return ok
}

// Every event Encode writes, stored as Postgres' jsonb gives it back (keys
// reordered, ", " and ": ") or as Encode wrote it, goes the fast way and
// decodes as encoding/json decodes it.
func TestFlatDecodeTakesEveryEncodedEvent(t *testing.T) {
	for _, e := range allEvents() {
		typ, data, err := Encode(e)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(data, &m))
		flat := true
		for _, v := range m {
			switch v.(type) {
			case []any, map[string]any:
				flat = false // payout lines: encoding/json's
			}
		}
		got, err := Decode(typ, data)
		require.NoError(t, err)
		assert.Equal(t, e, got, typ)
		// The wire struct of the type, through both decoders.
		w := wireOf(t, typ)
		fast := reflect.New(w).Interface()
		slow := reflect.New(w).Interface()
		ok := unmarshalFlat(data, fast)
		require.NoError(t, json.Unmarshal(data, slow))
		assert.Equal(t, flat, ok, "fast path taken for %s: %s", typ, data)
		if ok {
			assert.Equal(t, slow, fast, typ)
		}
	}
}

// wireOf is the wire struct Decode uses for typ (by decoding through a
// probe: the build function's parameter type).
func wireOf(t *testing.T, typ string) reflect.Type {
	t.Helper()
	types := map[string]any{
		TypeAuthorized: wireAuthorized{}, TypeCaptured: wireCaptured{}, TypeFeeRecorded: wireFee{},
		TypeFailed: wireFailed{}, TypeCanceled: wireReason{}, TypeRefundPending: wireRefund{},
		TypeRefundPosted: wireRefund{}, TypeRefundReversed: wireRefund{}, TypeDisputeOpened: wireDispute{},
		TypeDisputeWon: wireDisputeWon{}, TypeDisputeInquiry: wireDisputeInquiry{},
		TypeDisputeFundsWithdrawn: wireDispute{}, TypeDisputeFundsReinstated: wireDispute{},
		TypeDisputePending: wireDisputePending{}, TypePayoutFailed: wirePayoutFailed{},
		TypeDisputeLost: wireDisputeLost{}, TypePayoutPaid: wirePayout{}, TypePayoutTraced: wirePayoutTraced{}, TypeFlagged: wireRecon{},
		TypeCleared: wireRecon{}, TypeResolved: wireAction{}, TypeReopened: wireAction{},
		TypeLineSettled: wireLine{}, TypeFeeSettled: wireFeeSettled{}, TypeConverted: wireConverted{},
		TypePayoutLinesCounted: wirePayoutLines{}, TypeCaptureReduced: wireCaptureReduced{},
	}
	w, ok := types[typ]
	require.True(t, ok, "no wire struct listed for %s", typ)
	return reflect.TypeOf(w)
}

// The inputs the fast path must leave to encoding/json, and those it may
// take, on both sides of every rule: whatever it takes decodes as
// encoding/json decodes it.
func TestFlatDecodeAgreesWithEncodingJSON(t *testing.T) {
	base := `"provider": "stripe", "payment_key": "pi_1", "dedup_key": "evt_1", "occurred_at": "2026-01-01T00:00:00Z"`
	takes := []string{
		`{` + base + `, "capture_id": "ch_1", "amount": 1000, "fee": 30, "currency": "USD"}`,
		`{"amount":-1000,"fee":0,` + base + `}`,
		" \n\t{ " + base + " , \"amount\" : 9223372036854775807 } \r\n",
		`{"amount": -9223372036854775808}`,
		`{"amount": 1, "amount": 2}`, // the last one wins, as in encoding/json
		`{"capture_id": "ünïcödé 日本 💶", "amount": -0}`,
		"{\"capture_id\": \"\", \"currency\": \"\x7f\u2028\"}", // DEL and U+2028 raw: plain characters
		`{}`,
	}
	for _, in := range takes {
		assert.True(t, agree[wireCaptured](t, in), "should take: %s", in)
	}
	leaves := []string{
		`{"Amount": 5}`,                  // another case: encoding/json matches it anyway
		`{"amount": 5, "x": 1}`,          // an unknown key
		`{"capture_id": "a\"b"}`,         // an escape
		`{"capture_id": "a\nb"}`,         // an escaped control character
		"{\"capture_id\": \"a\x01b\"}",   // a raw control character (invalid)
		"{\"capture_id\": \"\xff\xfe\"}", // invalid UTF-8: replaced by encoding/json
		`{"capture_id": null}`,
		`{"amount": null}`,
		`{"amount": 1.5}`,
		`{"amount": 1e3}`,
		`{"amount": 01}`,
		`{"amount": 9223372036854775808}`,
		`{"amount": "5"}`,
		`{"capture_id": 5}`,
		`{"amount": true}`,
		`{"amount": -}`,
		`{"amount": 5,}`,
		`{"amount": 5} x`,
		`{"amount": 5`,
		`{"amount" 5}`,
		`{"capture_id": {"a": 1}}`,
		`{"capture_id": ["a"]}`,
		`[]`,
		``,
		`{"capture_id": "ab`,
	}
	for _, in := range leaves {
		assert.False(t, agree[wireCaptured](t, in), "should leave to encoding/json: %q", in)
	}
	// Booleans, and embedded structs two deep.
	assert.True(t, agree[wireDisputeLost](t, `{"dispute_id": "du_1", "amount": 5, "reverses_win": true}`))
	assert.True(t, agree[wireDisputeLost](t, `{"reverses_win": false, "provider": "x"}`))
	assert.False(t, agree[wireDisputeLost](t, `{"reverses_win": 1}`))
	assert.False(t, agree[wireDisputeLost](t, `{"reverses_win": tru}`))
	assert.False(t, agree[wireDisputeLost](t, `{"reverses_win": truex}`))
	// A slice field is encoding/json's.
	assert.False(t, agree[wirePayoutLines](t, `{"payout_id": "po_1", "lines": []}`))
	assert.True(t, agree[wirePayoutLines](t, `{"payout_id": "po_1"}`))
}

// FuzzFlatDecode: on any input, the fast path either leaves it or decodes
// it as encoding/json does.
func FuzzFlatDecode(f *testing.F) {
	for _, e := range allEvents() {
		_, data, err := Encode(e)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(`{"amount": -0, "capture_id": "x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		agree[wireCaptured](t, string(data))
		agree[wireDisputeLost](t, string(data))
		agree[wirePayoutFailed](t, string(data))
	})
}
