package delivery_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/domain/delivery"
)

func TestFactsHash(t *testing.T) {
	base := func() delivery.Event {
		return delivery.Event{Provider: "stripe", DedupKey: "evt_1", Type: "charge.refunded", PaymentKey: "pi_1",
			OccurredAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), PayloadHash: "aa", Raw: []byte("{}"),
			Facts: []delivery.Fact{
				{Kind: delivery.KindCaptured, BusinessID: "ch_1", Amount: 1000, Fee: 30, Currency: "USD"},
				{Kind: delivery.KindRefunded, BusinessID: "re_1", Amount: 400, Currency: "USD"},
			}}
	}
	h := base().FactsHash()
	assert.Len(t, h, 64)

	same := base()
	same.PayloadHash, same.Raw = "bb", []byte(`{ }`)
	same.OccurredAt = same.OccurredAt.Add(time.Hour)
	same.Facts[0].Reason = "re-rendered"
	same.Facts[0], same.Facts[1] = same.Facts[1], same.Facts[0]
	assert.Equal(t, h, same.FactsHash(), "bytes, time, reason and fact order are not facts")

	for name, change := range map[string]func(*delivery.Event){
		"type":         func(e *delivery.Event) { e.Type = "charge.succeeded" },
		"payment key":  func(e *delivery.Event) { e.PaymentKey = "pi_2" },
		"kind":         func(e *delivery.Event) { e.Facts[1].Kind = delivery.KindRefundFailed },
		"business id":  func(e *delivery.Event) { e.Facts[1].BusinessID = "re_2" },
		"amount":       func(e *delivery.Event) { e.Facts[1].Amount = 401 },
		"fee":          func(e *delivery.Event) { e.Facts[0].Fee = 31 },
		"currency":     func(e *delivery.Event) { e.Facts[0].Currency = "EUR" },
		"discount":     func(e *delivery.Event) { e.Facts[0].Discount = 5 },
		"sub-merchant": func(e *delivery.Event) { e.SubMerchant = "1900000109" },
		"a fact less":  func(e *delivery.Event) { e.Facts = e.Facts[:1] },
		"ids shifted":  func(e *delivery.Event) { e.Facts[1].BusinessID, e.Facts[1].Currency = "re_1U", "SD" },
	} {
		e := base()
		change(&e)
		assert.NotEqual(t, h, e.FactsHash(), name)
	}
}

// TestFactsHashClassifiesEveryField: every field of Event and Fact is either
// hashed or left out on purpose (FactsHash's doc says which and why). A new
// field fails here until it is classified: hashed, or listed as not a fact.
func TestFactsHashClassifiesEveryField(t *testing.T) {
	fields := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	assert.ElementsMatch(t, []string{
		"Type", "PaymentKey", "Facts", "SubMerchant", // hashed
		"Provider", "DedupKey", "OccurredAt", "PayloadHash", "Raw", // not facts
		"References", // the merchant's ids, for the search: not facts
	}, fields(delivery.Event{}))
	assert.ElementsMatch(t, []string{
		"Kind", "BusinessID", "Amount", "Fee", "Discount", "Currency", "Settlement", "Counted", // hashed
		"Reason",                // free text: not a fact
		"LegacyID",              // hashed in BusinessID's place when set
		"ArrivalDate",           // a payout's arrival day: moves no money, not hashed
		"TraceID", "Descriptor", // what a bank line names a payout by: move no money, not hashed
		"Bank", // hashed: a bank line's identity and money, a statement's balances, a payout's (bank.go)
	}, fields(delivery.Fact{}))
}
