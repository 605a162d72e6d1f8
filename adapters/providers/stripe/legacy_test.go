package stripe_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
)

const (
	legacyPI        = "pi_1HhLfA2eZvKYlo2CzLeGaCy1"
	legacySucceeded = "ch_1HhLgB2eZvKYlo2CsUcCeSs1"
	legacyDeclined  = "ch_1HhLfP2eZvKYlo2CdEcLiNe1"
)

// legacyCharges returns the legacy payment_intent.succeeded fixture with
// charges.data replaced by what fn returns from the fixture's two entries
// (succeeded first, then the declined attempt).
func legacyCharges(t *testing.T, fn func(succeeded, declined map[string]any) []any) []byte {
	t.Helper()
	return mutate(t, "payment_intent.succeeded.legacy_charges.json", func(r map[string]any) {
		c := obj(r)["charges"].(map[string]any)
		list := c["data"].([]any)
		c["data"] = fn(list[0].(map[string]any), list[1].(map[string]any))
	})
}

// Accounts pinned to an API version before 2022-11-15 send
// payment_intent.succeeded with charges.data instead of latest_charge. That
// was a 400 (and days of Stripe retries); the capture must now come from the
// list, and a delivery naming no charge is recorded without facts.
func TestLegacyPaymentIntentSucceeded(t *testing.T) {
	a := newAdapter(t)
	captured := func(id string) []delivery.Fact {
		return []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: id, Amount: 3500, Currency: "EUR"}}
	}
	cases := []struct {
		name  string
		body  []byte
		facts []delivery.Fact
	}{
		{"declined attempt listed after the success", providertest.Fixture(t, "payment_intent.succeeded.legacy_charges.json"), captured(legacySucceeded)},
		{"declined attempt listed first", legacyCharges(t, func(ok, no map[string]any) []any { return []any{no, ok} }), captured(legacySucceeded)},
		{"one charge, first try", legacyCharges(t, func(ok, _ map[string]any) []any { return []any{ok} }), captured(legacySucceeded)},
		{"one charge without status or captured", legacyCharges(t, func(ok, _ map[string]any) []any {
			delete(ok, "status")
			delete(ok, "captured")
			return []any{ok}
		}), captured(legacySucceeded)},
		{"several, none succeeded", legacyCharges(t, func(_, no map[string]any) []any {
			other := map[string]any{"id": "ch_other", "object": "charge", "status": "pending", "captured": false}
			return []any{no, other}
		}), nil},
		{"several, the succeeded one not captured", legacyCharges(t, func(ok, no map[string]any) []any {
			ok["captured"] = false
			return []any{ok, no}
		}), nil},
		{"empty charges list", legacyCharges(t, func(_, _ map[string]any) []any { return []any{} }), nil},
		{"no charges and no latest_charge", mutate(t, "payment_intent.succeeded.legacy_charges.json", func(r map[string]any) {
			delete(obj(r), "charges")
		}), nil},
		{"current version, latest_charge null", set(t, "payment_intent.succeeded.json", "latest_charge", nil), nil},
		{"latest_charge wins over charges", set(t, "payment_intent.succeeded.legacy_charges.json", "latest_charge", legacyDeclined), captured(legacyDeclined)},
		{"latest_charge empty, charges used", set(t, "payment_intent.succeeded.legacy_charges.json", "latest_charge", ""), captured(legacySucceeded)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := providertest.ParseOne(t, a, signed(tc.body, secret, now))
			key := legacyPI
			if strings.Contains(tc.name, "current version") {
				key = "pi_3QxYzA2eZvKYlo2C1PJqQe7b"
			}
			providertest.CheckEvent(t, tc.name, ev, providertest.Want{Provider: "stripe", PaymentKey: key, DedupKey: ev.DedupKey, Raw: tc.body, Facts: tc.facts})
			if tc.facts == nil {
				assert.Truef(t, ev.Ignored(), "want an ignored payment_intent.succeeded, got %+v", ev)
				assert.Equal(t, "payment_intent.succeeded", ev.Type)
			}
		})
	}
}

func set(t *testing.T, file, field string, v any) []byte {
	t.Helper()
	return mutate(t, file, func(r map[string]any) { obj(r)[field] = v })
}

// The capture a legacy payment_intent.succeeded reports is the one the
// charge.succeeded for the embedded charge reports: same stream, same fact,
// so the domain records it once. With the balance transaction expanded in
// both, the fee agrees too.
func TestLegacyCaptureReportedTwiceAgrees(t *testing.T) {
	a := newAdapter(t)
	var embedded map[string]any
	withFee := func(c map[string]any) {
		c["balance_transaction"] = map[string]any{"id": "txn_1HhLgB2eZvKYlo2CbAlTrAn1", "object": "balance_transaction", "fee": json.Number("132")}
	}
	piBody := legacyCharges(t, func(ok, no map[string]any) []any {
		withFee(ok)
		embedded = ok
		return []any{ok, no}
	})
	chBody := mutate(t, "charge.succeeded.json", func(r map[string]any) {
		r["data"] = map[string]any{"object": embedded}
	})
	viaPI := providertest.ParseOne(t, a, signed(piBody, secret, now))
	viaCharge := providertest.ParseOne(t, a, signed(chBody, secret, now))
	assert.Equal(t, "payment-stripe-"+legacyPI, viaPI.StreamID(), "stream via the payment intent")
	assert.Equal(t, "payment-stripe-"+legacyPI, viaCharge.StreamID(), "stream via the charge")
	require.Len(t, viaPI.Facts, 1, "facts via the payment intent")
	require.Equal(t, viaPI.Facts, viaCharge.Facts, "facts differ")
	assert.Equalf(t, int64(132), viaPI.Facts[0].Fee, "fact %+v", viaPI.Facts[0])
	assert.Equalf(t, legacySucceeded, viaPI.Facts[0].BusinessID, "fact %+v", viaPI.Facts[0])
}

// A legacy Charges API payment (payment_intent null) is keyed by its charge
// id, from charge.id on charge.* and from charge on refunds and disputes, so
// the charge, its refund (reported twice) and its dispute share one stream.
// An expanded charge reference is read through its id.
func TestLegacyChargeWithoutPaymentIntentSharesOneStream(t *testing.T) {
	const stream = "payment-stripe-ch_1GqLeG2eZvKYlo2CnOpIoNlY"
	a := newAdapter(t)
	expandedCharge := mutate(t, "charge.dispute.created.legacy_no_pi.json", func(r map[string]any) {
		obj(r)["charge"] = map[string]any{"id": "ch_1GqLeG2eZvKYlo2CnOpIoNlY", "object": "charge", "payment_intent": nil}
	})
	bodies := map[string][]byte{"expanded charge on a dispute": expandedCharge}
	for _, f := range []string{
		"charge.succeeded.legacy_no_pi.json", "charge.refunded.legacy_no_pi.json",
		"charge.refund.updated.legacy_no_pi.json", "charge.dispute.created.legacy_no_pi.json",
	} {
		bodies[f] = providertest.Fixture(t, f)
	}
	refundIDs := map[string]bool{}
	for name, body := range bodies {
		ev := providertest.ParseOne(t, a, signed(body, secret, now))
		assert.Equalf(t, stream, ev.StreamID(), "%s: stream", name)
		assert.Falsef(t, ev.Ignored(), "%s: no facts", name)
		for _, f := range ev.Facts {
			if f.Kind == delivery.KindRefunded {
				refundIDs[f.BusinessID] = true
			}
		}
	}
	assert.Len(t, refundIDs, 1, "the refund reported twice has one business id")
	// Pending (no facts) deliveries are keyed the same way, best effort.
	pending := set(t, "charge.refund.updated.legacy_no_pi.json", "status", "pending")
	ev := providertest.ParseOne(t, a, signed(pending, secret, now))
	assert.Truef(t, ev.Ignored(), "pending legacy refund: %+v", ev)
	assert.Equal(t, "ch_1GqLeG2eZvKYlo2CnOpIoNlY", ev.PaymentKey, "pending legacy refund")
}

// A signed payload that names a key twice in one object, at any depth, is a
// 400 naming the key: "amount":1,"amount":2 does not say one amount.
func TestDuplicateKeysRefused(t *testing.T) {
	a := newAdapter(t)
	edit := func(file, old, new string) []byte { return providertest.Edit(t, file, old, new) }
	cases := []struct {
		name, field string
		body        []byte
	}{
		{"amount twice", "data.object.amount", edit("charge.succeeded.json", `"amount": 2000,`, `"amount": 1, "amount": 2000,`)},
		{"same value twice", "data.object.amount", edit("charge.succeeded.json", `"amount": 2000,`, `"amount": 2000, "amount": 2000,`)},
		{"escaped spelling of the same key", "data.object.amount", edit("charge.succeeded.json", `"amount": 2000,`, `"\u0061mount": 1, "amount": 2000,`)},
		{"top-level type", "type", edit("charge.succeeded.json", `"object": "event",`, `"object": "event", "type": "payout.paid",`)},
		{"data.object twice", "data.object", edit("charge.succeeded.json", `"data": {`, `"data": {"object": {"id": "ch_x"},`)},
		{"inside metadata", "data.object.metadata.order_id", edit("charge.succeeded.json", `"metadata": {"order_id": "1041"}`, `"metadata": {"order_id": "1041", "order_id": "1042"}`)},
		{"inside a list entry", "data.object.charges.data[1].id", edit("payment_intent.succeeded.legacy_charges.json", `"id": "ch_1HhLfP2eZvKYlo2CdEcLiNe1",`, `"id": "ch_1HhLfP2eZvKYlo2CdEcLiNe1", "id": "ch_other",`)},
		{"ignored event type", "data.object.email", edit("customer.created.json", `"object": "customer",`, `"object": "customer", "email": "a@example.com", "email": "b@example.com",`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := a.Parse(signed(tc.body, secret, now))
			providertest.CheckFieldError(t, tc.name, evs, err, payload.ErrDuplicateKey, tc.field)
			assert.ErrorIs(t, err, delivery.ErrMalformed, "does not wrap ErrMalformed")
		})
	}
	// Keys differing in case are different keys to Stripe (metadata keys are
	// the merchant's): accepted.
	body := edit("charge.succeeded.json", `"metadata": {"order_id": "1041"}`, `"metadata": {"orderId": "1041", "orderid": "1042", "ORDERID": "x"}`)
	_, err := a.Parse(signed(body, secret, now))
	assert.NoError(t, err, "case-distinct metadata keys refused")
	// The check is on authenticated bytes only: unsigned, it stays a 401.
	bad := edit("charge.succeeded.json", `"amount": 2000,`, `"amount": 1, "amount": 2000,`)
	_, err = a.Parse(withBody(signed(providertest.Fixture(t, "charge.succeeded.json"), secret, now), bad))
	assert.ErrorIs(t, err, providers.ErrUnauthorized, "unsigned duplicate")
}
