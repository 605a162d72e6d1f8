package delivery

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func valid() Event {
	return Event{Provider: "stripe", DedupKey: "evt_1", Type: "charge.succeeded", PaymentKey: "pi_1",
		Facts: []Fact{{Kind: KindCaptured, BusinessID: "ch_1", Amount: 1000, Fee: 30, Currency: "USD", Reason: "ok"}}}
}

func TestValidateAcceptsValid(t *testing.T) {
	require.NoError(t, valid().Validate())
	e := valid()
	e.Facts[0].Reason = "line one\nline two\ttabbed, ünïcode"
	e.DedupKey = strings.Repeat("k", MaxIDBytes)
	e.Facts[0].BusinessID = strings.Repeat("é", MaxIDBytes/2)
	require.NoError(t, e.Validate(), "newline in reason, ids at the limit")
}

// Every string the database would refuse, or that no id may hold, is bad
// input (ErrMalformed naming the field), never a retryable failure.
func TestValidateRejectsWhatTheDatabaseRefuses(t *testing.T) {
	long := strings.Repeat("x", MaxIDBytes+1)
	cases := []struct {
		name  string
		field string
		edit  func(*Event)
	}{
		{"NUL in provider", "provider", func(e *Event) { e.Provider = "str\x00ipe" }},
		{"NUL in dedup key", "dedup key", func(e *Event) { e.DedupKey = "evt\x00" }},
		{"newline in dedup key", "dedup key", func(e *Event) { e.DedupKey = "evt\n1" }},
		{"DEL in dedup key", "dedup key", func(e *Event) { e.DedupKey = "evt\x7f" }},
		{"NUL in type", "type", func(e *Event) { e.Type = "charge\x00" }},
		{"tab in payment key", "payment id", func(e *Event) { e.PaymentKey = "pi\t1" }},
		{"NUL in business id", "fact 0 id", func(e *Event) { e.Facts[0].BusinessID = "ch\x00" }},
		{"NUL in currency", "fact 0 currency", func(e *Event) { e.Facts[0].Currency = "US\x00" }},
		{"NUL in reason", "fact 0 reason", func(e *Event) { e.Facts[0].Reason = "declined\x00" }},
		{"invalid UTF-8 in reason", "fact 0 reason", func(e *Event) { e.Facts[0].Reason = "\xff" }},
		{"invalid UTF-8 in payment key", "payment id", func(e *Event) { e.PaymentKey = "pi_\xc3" }},
		{"long dedup key", "dedup key", func(e *Event) { e.DedupKey = long }},
		{"long type", "type", func(e *Event) { e.Type = long }},
		{"long payment key", "payment id", func(e *Event) { e.PaymentKey = long }},
		{"long business id", "fact 0 id", func(e *Event) { e.Facts[0].BusinessID = long }},
		{"lower-case currency", "currency", func(e *Event) { e.Facts[0].Currency = "usd" }},
	}
	for _, tc := range cases {
		e := valid()
		tc.edit(&e)
		err := e.Validate()
		if assert.ErrorIs(t, err, ErrMalformed, tc.name) {
			assert.ErrorContainsf(t, err, tc.field, "%s: the error names the field", tc.name)
		}
	}
	// Ignored deliveries are recorded in the inbox too: their ids are checked.
	e := valid()
	e.Facts = nil
	e.DedupKey = "evt\x00"
	assert.ErrorIs(t, e.Validate(), ErrMalformed, "ignored delivery with NUL dedup key")
	// A payout's id names its stream.
	e = Event{Provider: "stripe", DedupKey: "evt_1", Type: "payout.paid",
		Facts: []Fact{{Kind: KindPayoutPaid, BusinessID: long, Amount: 1, Currency: "USD"}}}
	assert.ErrorIs(t, e.Validate(), ErrMalformed, "long payout id")
}

func TestTruncateReason(t *testing.T) {
	require.Equal(t, "short", TruncateReason("short"))
	exact := strings.Repeat("a", MaxReasonBytes)
	require.Equal(t, exact, TruncateReason(exact), "a reason at the limit was cut")
	// "€" is 3 bytes; 1024 is not a multiple of 3, so the cut falls inside
	// a rune and must move back to its start.
	r := TruncateReason(strings.Repeat("€", MaxReasonBytes))
	require.Len(t, r, MaxReasonBytes/3*3, "cut to a whole rune")
	require.True(t, strings.HasPrefix(strings.Repeat("€", MaxReasonBytes), r), "cut to a whole rune")
}

func TestValidateAmountBound(t *testing.T) {
	ev := Event{Provider: "stripe", DedupKey: "evt_1", Type: "charge.succeeded", PaymentKey: "pi_1",
		Facts: []Fact{{Kind: KindCaptured, BusinessID: "ch_1", Amount: MaxAmount, Currency: "USD"}}}
	require.NoError(t, ev.Validate(), "the bound itself is accepted")
	ev.Facts[0].Amount = MaxAmount + 1
	assert.ErrorIs(t, ev.Validate(), ErrInvalidAmount)
	ev.Facts[0].Amount = math.MaxInt64
	assert.ErrorIs(t, ev.Validate(), ErrInvalidAmount)
}

func TestPayoutFailedIsAPayoutFact(t *testing.T) {
	ev := Event{Provider: "stripe", DedupKey: "evt_1", Type: "payout.failed",
		Facts: []Fact{{Kind: KindPayoutFailed, BusinessID: "po_1", Amount: 100, Currency: "USD"}}}
	require.NoError(t, ev.Validate())
	assert.True(t, ev.IsPayout())
	assert.Equal(t, "payout-stripe-po_1", ev.StreamID())
}

func TestValidateDiscount(t *testing.T) {
	capture := func(amount, fee, discount int64) Event {
		return Event{Provider: "alipay", DedupKey: "n1", Type: "TRADE_SUCCESS", PaymentKey: "t1",
			Facts: []Fact{{Kind: KindCaptured, BusinessID: "t1", Amount: amount, Fee: fee, Discount: discount, Currency: "CNY"}}}
	}
	assert.NoError(t, capture(1000, 0, 100).Validate())
	assert.NoError(t, capture(1000, 900, 100).Validate())
	assert.ErrorIs(t, capture(1000, 901, 100).Validate(), ErrInvalidAmount)
	assert.ErrorIs(t, capture(1000, 0, -1).Validate(), ErrInvalidAmount)
	refund := capture(1000, 0, 100)
	refund.Facts[0].Kind = KindRefunded
	assert.NoError(t, refund.Validate(), "a refund returns coupon money (issue 34)")
	refund.Facts[0].Discount = 1001
	assert.ErrorIs(t, refund.Validate(), ErrInvalidAmount, "never more than the refund")
	dispute := capture(1000, 0, 100)
	dispute.Facts[0].Kind = KindDisputeOpened
	assert.ErrorIs(t, dispute.Validate(), ErrMalformed, "only captures and refunds carry a discount")
}
