package adyen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// testKey signed the files under testdata that are not official vectors.
const testKey = "5A5A0F0F1E1E2D2D3C3C4B4B5A5A69697878878796969A9AABABBCBCCDCDDEDE"

// otherKey is a valid key that signed nothing.
const otherKey = "00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF"

func mustNew(t testing.TB, keys ...string) *Adapter {
	t.Helper()
	return providertest.Adapter(t, New, keys)
}

func parse(a *Adapter, body []byte) ([]delivery.Event, error) {
	return a.Parse(providers.Request{Body: body, Now: time.Now()})
}

// Official vectors published in Adyen's API libraries' HMAC validator tests.
func TestOfficialSignatureVectors(t *testing.T) {
	cases := []struct {
		source                               string
		key, psp, orig, acct, ref, cur, code string
		value                                int64
		success, want                        string
	}{
		{
			source: "Adyen/adyen-php-api-library tests/Adyen/Util/HmacSignatureTest.php",
			key:    "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00",
			psp:    "7914073381342284", acct: "TestMerchant", ref: "TestPayment-1407325143704",
			value: 1130, cur: "EUR", code: "AUTHORISATION", success: "true",
			want: "Ny9gS2veKo5E4w8/OL6xz1/wvT/hYkAXy1xNc/QvO4I=",
		},
		{
			source: "Adyen/adyen-ruby-api-library spec/utils/hmac_validator_spec.rb",
			key:    "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056",
			psp:    "7914073381342284", acct: "TestMerchant", ref: "TestPayment-1407325143704",
			value: 1130, cur: "EUR", code: "AUTHORISATION", success: "true",
			want: "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0=",
		},
	}
	for _, c := range cases {
		got, err := Sign(c.key, c.psp, c.orig, c.acct, c.ref, c.value, c.cur, c.code, c.success)
		require.NoError(t, err)
		assert.Equalf(t, c.want, got, "%s: signature", c.source)
	}
}

// The Java library's vectors are whole items; they are parsed as Adyen sends
// them (wrapped in a batch), so they exercise the real decoding: a string
// amount value in one, backslashes and colons (not escaped) in the other.
func TestOfficialJavaItems(t *testing.T) {
	// Adyen/adyen-java-api-library src/test/java/com/adyen/util/HMACValidatorTest.java testValidateHMAC
	evs, err := parse(mustNew(t, "9064450A8892A093D9E97EFCC9639DE31B74F3A7803135555A3C96F5A57915D6"),
		providertest.Fixture(t, "java_report_available.json"))
	require.NoError(t, err, "REPORT_AVAILABLE vector refused")
	require.Lenf(t, evs, 1, "REPORT_AVAILABLE: got %+v", evs)
	require.Truef(t, evs[0].Ignored(), "REPORT_AVAILABLE: got %+v", evs)
	require.Equal(t, "test_REPORT_AVAILABLE:REPORT_AVAILABLE:true", evs[0].DedupKey, "REPORT_AVAILABLE")

	// ... testValidateHMACWithoutEscaping with mocks/hmac-validation-webhook.json
	evs, err = parse(mustNew(t, "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174"),
		providertest.Fixture(t, "java_authorisation_slashes.json"))
	require.NoError(t, err, "slashes vector refused")
	ev := evs[0]
	want := delivery.Fact{Kind: delivery.KindAuthorized, Amount: 1000, Currency: "EUR"}
	require.Equalf(t, "ZVWN7D3WSMK2WN82", ev.PaymentKey, "slashes vector: got %+v", ev)
	require.Equalf(t, []delivery.Fact{want}, ev.Facts, "slashes vector: got %+v", ev)
	assert.Truef(t, ev.OccurredAt.Equal(time.Date(2023, 1, 10, 12, 42, 29, 0, time.UTC)), "OccurredAt %v", ev.OccurredAt)

	// The same vectors with another key are refused.
	_, err = parse(mustNew(t, otherKey), providertest.Fixture(t, "java_authorisation_slashes.json"))
	require.ErrorIs(t, err, providers.ErrUnauthorized, "wrong key")
}

func TestLifecycleBatch(t *testing.T) {
	evs, err := parse(mustNew(t, testKey), providertest.Fixture(t, "lifecycle.json"))
	require.NoError(t, err)
	want := []wantEvent{
		{"QFQTPCQ8HXSKGK82:AUTHORISATION:true", "AUTHORISATION", "QFQTPCQ8HXSKGK82",
			[]delivery.Fact{{Kind: delivery.KindAuthorized, Amount: 1000, Currency: "EUR"}}},
		{"LWX3JCWDNRRBNZ65:CAPTURE:true", "CAPTURE", "QFQTPCQ8HXSKGK82",
			[]delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "LWX3JCWDNRRBNZ65", Amount: 1000, Currency: "EUR"}}},
		{"V4HZ4RBFJGXXGN82:REFUND:true", "REFUND", "QFQTPCQ8HXSKGK82",
			[]delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: "V4HZ4RBFJGXXGN82", Amount: 250, Currency: "EUR"}}},
	}
	checkEvents(t, evs, want)
	assert.Truef(t, evs[1].OccurredAt.Equal(time.Date(2026, 11, 29, 9, 5, 0, 0, time.UTC)), "capture OccurredAt %v", evs[1].OccurredAt)
}

func TestDisputes(t *testing.T) {
	evs, err := parse(mustNew(t, testKey), providertest.Fixture(t, "disputes.json"))
	require.NoError(t, err)
	d := func(k delivery.Kind) []delivery.Fact {
		return []delivery.Fact{{Kind: k, BusinessID: "DZ4DPSHB4WD2WN82", Amount: 1000, Currency: "EUR"}}
	}
	checkEvents(t, evs, []wantEvent{
		{"DZ4DPSHB4WD2WN82:NOTIFICATION_OF_CHARGEBACK:true", "NOTIFICATION_OF_CHARGEBACK", "QFQTPCQ8HXSKGK82", d(delivery.KindDisputeInquiry)},
		{"DZ4DPSHB4WD2WN82:CHARGEBACK:true", "CHARGEBACK", "QFQTPCQ8HXSKGK82", d(delivery.KindDisputeOpened)},
		{"DZ4DPSHB4WD2WN82:CHARGEBACK_REVERSED:true", "CHARGEBACK_REVERSED", "QFQTPCQ8HXSKGK82", d(delivery.KindDisputeWon)},
		{"DZ4DPSHB4WD2WN82:SECOND_CHARGEBACK:true", "SECOND_CHARGEBACK", "QFQTPCQ8HXSKGK82", d(delivery.KindDisputeLost)},
	})
}

func TestFailuresAndCancellation(t *testing.T) {
	evs, err := parse(mustNew(t, testKey), providertest.Fixture(t, "failures.json"))
	require.NoError(t, err)
	checkEvents(t, evs, []wantEvent{
		{"R7KZ2V7G3HN2WN82:AUTHORISATION:false", "AUTHORISATION", "R7KZ2V7G3HN2WN82",
			[]delivery.Fact{{Kind: delivery.KindFailed, Amount: 4200, Currency: "USD", Reason: "Not enough balance"}}},
		{"M8V5VX3SCNGXGN82:CANCELLATION:true", "CANCELLATION", "T3WBXQ6C5JGXGN82",
			[]delivery.Fact{{Kind: delivery.KindCanceled}}},
		{"G9QW5M3DPV2WN82:REFUND:false", "REFUND", "QFQTPCQ8HXSKGK82", nil},
		{"V4HZ4RBFJGXXGN82:REFUND_FAILED:true", "REFUND_FAILED", "QFQTPCQ8HXSKGK82",
			[]delivery.Fact{{Kind: delivery.KindRefundFailed, BusinessID: "V4HZ4RBFJGXXGN82", Amount: 250, Currency: "EUR", Reason: "Refund rejected by the issuer"}}},
	})
}

type wantEvent struct {
	dedup, typ, key string
	facts           []delivery.Fact
}

func checkEvents(t *testing.T, evs []delivery.Event, want []wantEvent) {
	t.Helper()
	require.Len(t, evs, len(want), "events")
	for i, w := range want {
		label := fmt.Sprintf("event %d", i)
		// Raw is the item's canonical JSON, not bytes of the request.
		providertest.CheckEvent(t, label, evs[i], providertest.Want{Provider: "adyen", DedupKey: w.dedup, Type: w.typ, PaymentKey: w.key, Facts: w.facts})
		assert.Truef(t, json.Valid(evs[i].Raw), "%s: Raw is not JSON", label)
	}
}

func TestKeyRotation(t *testing.T) {
	body := providertest.Fixture(t, "lifecycle.json")
	_, err := parse(mustNew(t, otherKey, testKey), body)
	require.NoError(t, err, "second configured key should verify")
	_, err = parse(mustNew(t, strings.ToLower(testKey)), body)
	require.NoError(t, err, "lower-case hex key should verify")
	_, err = parse(mustNew(t, otherKey), body)
	require.ErrorIs(t, err, providers.ErrUnauthorized, "unknown key")
}

// One tampered item refuses the whole batch: no event at all comes back, even
// for the items that verify.
func TestTamperedItemRefusesWholeBatch(t *testing.T) {
	body := providertest.Fixture(t, "lifecycle.json")
	tampers := map[string][]byte{
		"refund amount":       bytes.Replace(body, []byte(`"value": 250`), []byte(`"value": 2500`), 1),
		"capture reference":   bytes.Replace(body, []byte(`"pspReference": "LWX3JCWDNRRBNZ65"`), []byte(`"pspReference": "LWX3JCWDNRRBNZ66"`), 1),
		"original reference":  bytes.Replace(body, []byte(`"originalReference": "QFQTPCQ8HXSKGK82"`), []byte(`"originalReference": "OTHERPAYMENT0001"`), 1),
		"currency":            bytes.Replace(body, []byte(`"currency": "EUR"`), []byte(`"currency": "USD"`), 1),
		"success flipped":     bytes.Replace(body, []byte(`"success": "true"`), []byte(`"success": "false"`), 1),
		"event code":          bytes.Replace(body, []byte(`"eventCode": "REFUND"`), []byte(`"eventCode": "CAPTURE"`), 1),
		"signature removed":   bytes.Replace(body, []byte(`"hmacSignature"`), []byte(`"hmacSignatureX"`), 1),
		"signature not b64":   bytes.Replace(body, []byte(`"hmacSignature": "`), []byte(`"hmacSignature": "!!`), 1),
		"merchant account":    bytes.Replace(body, []byte(`"merchantAccountCode": "OnceLedgerECOM"`), []byte(`"merchantAccountCode": "Attacker"`), 1),
		"originalRef dropped": bytes.Replace(body, []byte(`"originalReference": "QFQTPCQ8HXSKGK82",`), nil, 1),
	}
	a := mustNew(t, testKey)
	for name, b := range tampers {
		require.NotEqualf(t, body, b, "%s: tamper did not change the body", name)
		evs, err := parse(a, b)
		providertest.CheckUnauthorized(t, name, evs, err)
	}
}

func TestUnverifiableBodies(t *testing.T) {
	a := mustNew(t, testKey)
	for name, b := range map[string]string{
		"empty":         ``,
		"not json":      `[accepted]`,
		"no items":      `{"live":"false"}`,
		"empty items":   `{"live":"false","notificationItems":[]}`,
		"null item":     `{"live":"false","notificationItems":[{"NotificationRequestItem":null}]}`,
		"no signature":  `{"live":"false","notificationItems":[{"NotificationRequestItem":{"pspReference":"A","eventCode":"CAPTURE","success":"true","amount":{"value":1,"currency":"EUR"}}}]}`,
		"trailing data": string(providertest.Fixture(t, "lifecycle.json")) + `{}`,
	} {
		_, err := parse(a, []byte(b))
		assert.ErrorIs(t, err, providers.ErrUnauthorized, name)
	}
}

// The hash and dedup key of an item do not depend on the batch it came in or
// its layout; a different item hashes differently.
func TestPayloadHashIsPerItem(t *testing.T) {
	a := mustNew(t, testKey)
	full, err := parse(a, providertest.Fixture(t, "lifecycle.json"))
	require.NoError(t, err)
	var env map[string]any
	require.NoError(t, json.Unmarshal(providertest.Fixture(t, "lifecycle.json"), &env))
	items := env["notificationItems"].([]any)
	env["notificationItems"] = items[2:]
	single, err := json.Marshal(env) // compact, keys re-ordered
	require.NoError(t, err)
	one, err := parse(a, single)
	require.NoError(t, err)
	assert.Equal(t, full[2].PayloadHash, one[0].PayloadHash, "same item, different hash")
	assert.Equal(t, full[2].DedupKey, one[0].DedupKey, "same item, different key")
	assert.NotEqual(t, full[1].PayloadHash, full[0].PayloadHash, "distinct items share a payload hash")
}

// Items that verify but cannot be normalized are a 400-class error naming the
// field and the item.
func TestNormalizationErrors(t *testing.T) {
	a := mustNew(t, testKey)
	base := map[string]any{
		"pspReference": "PSP1", "originalReference": "PAY1", "merchantAccountCode": "M",
		"eventCode": "CAPTURE", "eventDate": "2026-11-29T10:00:00+01:00", "success": "true",
		"amount": map[string]any{"value": 100, "currency": "EUR"},
	}
	cases := []struct {
		name   string
		edit   func(m map[string]any)
		target error
		field  string
	}{
		{"unknown currency", func(m map[string]any) { m["amount"] = map[string]any{"value": 100, "currency": "XXQ"} }, money.ErrUnknownCurrency, "amount.currency"},
		{"negative value", func(m map[string]any) { m["amount"] = map[string]any{"value": -100, "currency": "EUR"} }, delivery.ErrInvalidAmount, "amount.value"},
		{"fractional value", func(m map[string]any) { m["amount"] = map[string]any{"value": 10.5, "currency": "EUR"} }, delivery.ErrInvalidAmount, "amount.value"},
		{"missing amount", func(m map[string]any) { delete(m, "amount") }, delivery.ErrMissingField, "amount"},
		{"missing currency", func(m map[string]any) { m["amount"] = map[string]any{"value": 100} }, delivery.ErrMissingField, "amount.currency"},
		{"missing eventDate", func(m map[string]any) { delete(m, "eventDate") }, delivery.ErrMissingField, "eventDate"},
		{"bad eventDate", func(m map[string]any) { m["eventDate"] = "yesterday" }, delivery.ErrMalformed, "eventDate"},
		{"bad success", func(m map[string]any) { m["success"] = "maybe" }, delivery.ErrMalformed, "success"},
		{"missing pspReference", func(m map[string]any) { delete(m, "pspReference") }, delivery.ErrMissingField, "pspReference"},
		{"missing eventCode", func(m map[string]any) { delete(m, "eventCode") }, delivery.ErrMissingField, "eventCode"},
	}
	for _, c := range cases {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		c.edit(m)
		evs, err := parse(a, signed(t, m))
		providertest.CheckFieldError(t, c.name, evs, err, c.target, c.field)
		if err != nil {
			assert.ErrorContainsf(t, err, "notificationItems[0]", "%s: the error does not name the item", c.name)
		}
	}
}

// signed wraps items in a batch signed with testKey.
func signed(t testing.TB, items ...map[string]any) []byte {
	t.Helper()
	var wrapped []any
	for _, it := range items {
		wrapped = append(wrapped, map[string]any{"NotificationRequestItem": it})
	}
	b, err := json.Marshal(map[string]any{"live": "false", "notificationItems": wrapped})
	require.NoError(t, err)
	out, err := SignBatch(testKey, b)
	require.NoError(t, err)
	return out
}

func TestUnhandledEventIsIgnored(t *testing.T) {
	body := signed(t, map[string]any{
		"pspReference": "PSP9", "eventCode": "RECURRING_CONTRACT", "eventDate": "2026-11-29T10:00:00Z",
		"success": "true", "merchantAccountCode": "M",
	})
	evs, err := parse(mustNew(t, testKey), body)
	require.NoError(t, err)
	require.Lenf(t, evs, 1, "got %+v", evs)
	require.Truef(t, evs[0].Ignored(), "got %+v", evs)
	require.Equal(t, "PSP9:RECURRING_CONTRACT:true", evs[0].DedupKey)
}

func TestNew(t *testing.T) {
	_, err := New(nil)
	assert.Error(t, err, "no keys accepted")
	_, err = New([]string{" ", ""})
	assert.Error(t, err, "blank keys accepted")
	_, err = New([]string{"not-hex"})
	assert.Error(t, err, "non-hex key accepted")
	a, err := New([]string{"", testKey})
	require.NoError(t, err, "New")
	require.Equal(t, "adyen", a.Name())
}

func FuzzAdyenParse(f *testing.F) {
	for _, name := range []string{"lifecycle.json", "disputes.json", "failures.json"} {
		f.Add(providertest.Fixture(f, name))
	}
	f.Add([]byte(`{"notificationItems":[{"NotificationRequestItem":{}}]}`))
	f.Add([]byte(`{"notificationItems":[{"NotificationRequestItem":{"amount":{"value":"1e3"}}}]}`))
	f.Add([]byte(`{"notificationItems":[{"NotificationRequestItem":{"eventCode":"CAPTURE","EventCode":"REFUND","additionalData":{"a":"1","A":"2"}}}]}`))
	f.Add([]byte(`{"notificationItems":[],"notificationItems":[{"NotificationRequestItem":{"pspReference":"1","pspReference":"2"}}]}`))
	right := mustNew(f, testKey)
	wrong := mustNew(f, otherKey)
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, err := parse(wrong, body)
		require.Errorf(t, err, "accepted with a key that signed nothing: %+v", evs)
		evs, err = parse(right, body)
		if err != nil {
			require.Nil(t, evs, "events returned with an error")
			return
		}
		for _, ev := range evs {
			require.NoError(t, ev.Validate(), "accepted an invalid event")
			// Every accepted item carries a signature over its own fields.
			var it item
			require.NoError(t, json.Unmarshal(ev.Raw, &it))
			require.Truef(t, right.verify(it), "accepted an item whose signature does not verify: %s", ev.Raw)
		}
	})
}

// A key repeated in one object (or, where a struct field reads it, repeated
// in another case) refuses the batch as unverifiable, even though every
// item's HMAC still matches: the signature covers selected values, not the
// bytes, so it cannot say which of two values was meant. additionalData is a
// map with exact keys: keys there differing in case are fine.
func TestDuplicateKeysRefuseTheBatch(t *testing.T) {
	body := providertest.Fixture(t, "lifecycle.json")
	a := mustNew(t, testKey)
	_, err := parse(a, body)
	require.NoError(t, err)
	edit := func(old, new string) []byte {
		t.Helper()
		b := bytes.Replace(body, []byte(old), []byte(new), 1)
		require.NotEqualf(t, body, b, "fixture lacks %q", old)
		return b
	}
	for name, c := range map[string]struct {
		body []byte
		path string
	}{
		// The HMAC is over the last value; the first says otherwise.
		"signed field repeated":     {edit(`"eventCode": "REFUND"`, `"eventCode": "CAPTURE", "eventCode": "REFUND"`), "notificationItems[2].NotificationRequestItem.eventCode"},
		"same value repeated":       {edit(`"eventCode": "REFUND"`, `"eventCode": "REFUND", "eventCode": "REFUND"`), "eventCode"},
		"repeated in another case":  {edit(`"eventCode": "REFUND"`, `"EventCode": "CAPTURE", "eventCode": "REFUND"`), "notificationItems[2].NotificationRequestItem.eventCode"},
		"unsigned field repeated":   {edit(`"eventDate": "`, `"reason": "x", "reason": "y", "eventDate": "`), "NotificationRequestItem.reason"},
		"signature repeated":        {edit(`"hmacSignature": "`, `"hmacSignature": "AAAA", "hmacSignature": "`), "additionalData.hmacSignature"},
		"amount value repeated":     {edit(`"value": 250`, `"value": 2500, "value": 250`), "amount.value"},
		"envelope repeated":         {edit(`"notificationItems"`, `"notificationItems": [], "notificationItems"`), "notificationItems"},
		"wrapper repeated by case":  {edit(`"NotificationRequestItem": {`, `"notificationRequestItem": {}, "NotificationRequestItem": {`), "NotificationRequestItem"},
		"additionalData, exact dup": {edit(`"hmacSignature": "`, `"shopperReference": "a", "shopperReference": "b", "hmacSignature": "`), "additionalData.shopperReference"},
	} {
		evs, err := parse(a, c.body)
		if providertest.CheckUnauthorized(t, name, evs, err) {
			assert.ErrorContainsf(t, err, "duplicate key", "%s: want a duplicate key error", name)
			assert.ErrorContainsf(t, err, c.path, "%s: the error does not name %s", name, c.path)
		}
	}
	caseOnly := edit(`"hmacSignature": "`, `"metadata.orderId": "a", "metadata.orderid": "b", "hmacSignature": "`)
	evs, err := parse(a, caseOnly)
	if assert.NoError(t, err, "additionalData keys differing in case") {
		assert.Len(t, evs, 3, "additionalData keys differing in case")
	}
}
