package stripe_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	stripego "github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

const (
	secret    = "whsec_test_7c0f3d1b2a9e8f6d5c4b3a2918f7e6d5"
	oldSecret = "whsec_test_old_0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	tolerance = 5 * time.Minute
)

var now = time.Unix(1764410460, 0) // a moment after the fixtures' created times

// newAdapter returns an adapter for secrets, by default the one secret the
// fixtures are signed with.
func newAdapter(t testing.TB, secrets ...string) *stripe.Adapter {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []string{secret}
	}
	return providertest.Adapter(t, func(secrets []string) (*stripe.Adapter, error) { return stripe.New(secrets, tolerance) }, secrets)
}

// signed builds a request signed by stripe-go, the provider's own library.
func signed(body []byte, secret string, ts time.Time) providers.Request {
	sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: ts})
	h := http.Header{}
	h.Set("Stripe-Signature", sp.Header)
	return providers.Request{Header: h, Body: body, Now: now}
}

func TestNew(t *testing.T) {
	_, err := stripe.New(nil, tolerance)
	assert.Error(t, err, "New with no secrets succeeded")
	_, err = stripe.New([]string{" ", ""}, tolerance)
	assert.Error(t, err, "New with blank secrets succeeded")
	_, err = stripe.New([]string{secret}, 0)
	assert.Error(t, err, "New with zero tolerance succeeded")
	a := newAdapter(t)
	assert.Equal(t, "stripe", a.Name())
}

func TestParseAcceptsStripeGoSignature(t *testing.T) {
	body := providertest.Fixture(t, "charge.succeeded.json")
	ev := providertest.ParseOne(t, newAdapter(t), signed(body, secret, now.Add(-10*time.Second)))
	assert.Equal(t, "evt_3QxYzA2eZvKYlo2C1x5Gh2aP", ev.DedupKey)
}

// Our Sign is the counterpart tests and tooling use; stripe-go must accept it
// and compute the same bytes.
func TestSignAcceptedByStripeGo(t *testing.T) {
	body := providertest.Fixture(t, "payment_intent.succeeded.json")
	ts := time.Now()
	header := stripe.Sign(secret, ts, body)
	require.NoError(t, webhook.ValidatePayloadWithTolerance(body, header, secret, tolerance), "stripe-go rejects our signature")
	want := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: ts}).Header
	assert.Equal(t, want, header, "Sign, against stripe-go")
	// And the header stripe-go accepts passes our verifier too.
	h := http.Header{}
	h.Set("Stripe-Signature", header)
	_, err := newAdapter(t).Parse(providers.Request{Header: h, Body: body, Now: ts})
	require.NoError(t, err)
}

func TestVerifyRejects(t *testing.T) {
	body := providertest.Fixture(t, "charge.succeeded.json")
	good := signed(body, secret, now).Header.Get("Stripe-Signature")
	goodSig := good[strings.Index(good, "v1=")+3:]
	ts := "t=" + strings.TrimPrefix(strings.Split(good, ",")[0], "t=")

	cases := []struct {
		name   string
		req    providers.Request
		reason string
	}{
		{"tampered body", withBody(signed(body, secret, now), bytes.Replace(body, []byte(`"amount": 2000`), []byte(`"amount": 2001`), 1)), "no valid signature"},
		{"tampered body, one byte appended", withBody(signed(body, secret, now), append(append([]byte{}, body...), ' ')), "no valid signature"},
		{"wrong secret", signed(body, "whsec_someone_else", now), "no valid signature"},
		{"secret without whsec_ prefix", signed(body, strings.TrimPrefix(secret, "whsec_"), now), "no valid signature"},
		{"stale", signed(body, secret, now.Add(-tolerance-time.Second)), "timestamp outside tolerance"},
		{"too far in the future", signed(body, secret, now.Add(tolerance+time.Second)), "timestamp outside tolerance"},
		{"absurd timestamp", withHeader(body, "t=-9223372036854775808,v1="+goodSig), "no valid signature"},
		{"missing header", providers.Request{Header: http.Header{}, Body: body, Now: now}, "missing Stripe-Signature header"},
		{"nil header map", providers.Request{Body: body, Now: now}, "missing Stripe-Signature header"},
		{"no timestamp", withHeader(body, "v1="+goodSig), "no timestamp"},
		{"two timestamps", withHeader(body, ts+",t=1,v1="+goodSig), "several timestamps"},
		{"bad timestamp", withHeader(body, "t=yesterday,v1="+goodSig), "bad timestamp"},
		{"no v1", withHeader(body, ts), "no valid signature"},
		{"only v0", withHeader(body, ts+",v0="+goodSig), "no valid signature"},
		{"garbage", withHeader(body, "garbage"), "invalid Stripe-Signature header"},
		{"non-hex v1", withHeader(body, ts+",v1=zz"), "no valid signature"},
		{"truncated v1", withHeader(body, ts+",v1="+goodSig[:32]), "no valid signature"},
		{"signature of empty body", withBody(signed(nil, secret, now), body), "no valid signature"},
	}
	a := newAdapter(t)
	for _, tc := range cases {
		providertest.CheckRefusal(t, a, tc.name, tc.req, tc.reason)
	}
}

// Verification comes before parsing: garbage with a bad signature is a 401,
// not a 400, and garbage correctly signed is a 400.
func TestVerifyBeforeParse(t *testing.T) {
	a := newAdapter(t)
	junk := []byte("{not json")
	_, err := a.Parse(withBody(signed(providertest.Fixture(t, "charge.succeeded.json"), secret, now), junk))
	assert.ErrorIs(t, err, providers.ErrUnauthorized, "unsigned junk")
	_, err = a.Parse(signed(junk, secret, now))
	assert.ErrorIs(t, err, delivery.ErrMalformed, "signed junk")
}

func TestToleranceBoundary(t *testing.T) {
	a := newAdapter(t)
	body := providertest.Fixture(t, "charge.succeeded.json")
	for _, ts := range []time.Time{now.Add(-tolerance), now.Add(tolerance), now} {
		_, err := a.Parse(signed(body, secret, ts))
		assert.NoErrorf(t, err, "timestamp %v from now", ts.Sub(now))
	}
}

func TestZeroNowMeansWallClock(t *testing.T) {
	body := providertest.Fixture(t, "charge.succeeded.json")
	r := signed(body, secret, time.Now())
	r.Now = time.Time{}
	_, err := newAdapter(t).Parse(r)
	require.NoError(t, err)
}

func TestRotation(t *testing.T) {
	body := providertest.Fixture(t, "charge.succeeded.json")
	both := newAdapter(t, oldSecret, secret)

	t.Run("second configured secret matches", func(t *testing.T) {
		providertest.ParseOne(t, both, signed(body, secret, now))
		providertest.ParseOne(t, both, signed(body, oldSecret, now))
	})
	t.Run("several v1 in the header, one valid", func(t *testing.T) {
		// What Stripe sends while rolling a secret: one signature per
		// active secret. Only the new one is configured here.
		oldHdr := signed(body, "whsec_retired", now).Header.Get("Stripe-Signature")
		newHdr := signed(body, secret, now).Header.Get("Stripe-Signature")
		hdr := oldHdr + "," + newHdr[strings.Index(newHdr, "v1="):]
		require.NoError(t, webhook.ValidatePayloadWithTolerance(body, hdr, secret, time.Duration(1<<62)), "stripe-go rejects the rotated header too")
		providertest.ParseOne(t, newAdapter(t), withHeader(body, hdr))
		// garbled entries and unknown schemes next to the valid one are ignored
		providertest.ParseOne(t, newAdapter(t), withHeader(body, hdr+",v1=nothex,v0=abcd,x=y"))
	})
	t.Run("no configured secret matches any v1", func(t *testing.T) {
		h1 := signed(body, "whsec_a", now).Header.Get("Stripe-Signature")
		h2 := signed(body, "whsec_b", now).Header.Get("Stripe-Signature")
		_, err := both.Parse(withHeader(body, h1+","+h2[strings.Index(h2, "v1="):]))
		require.ErrorIs(t, err, providers.ErrUnauthorized)
	})
}

func withBody(r providers.Request, body []byte) providers.Request {
	r.Body = body
	return r
}

func withHeader(body []byte, sig string) providers.Request {
	h := http.Header{}
	h.Set("Stripe-Signature", sig)
	return providers.Request{Header: h, Body: body, Now: now}
}

// ---------------------------------------------------------------------------
// Normalization

func TestNormalize(t *testing.T) {
	const (
		pi       = "pi_3QxYzA2eZvKYlo2C1PJqQe7b"
		piMan    = "pi_3QxZ0B2eZvKYlo2C0mManual"
		piFail   = "pi_3QxZ1C2eZvKYlo2C1dEcLiNe"
		ch       = "ch_3QxYzA2eZvKYlo2C1kTq9v0W"
		chMan    = "ch_3QxZ0B2eZvKYlo2C0hHoldCh"
		du       = "du_1QyAbC2eZvKYlo2CdIsPuTe1"
		legacyCh = "ch_1GqLeG2eZvKYlo2CnOpIoNlY"
		legacyRe = "re_1GrLeG2eZvKYlo2CrEfUnD01"
		usd      = money.Currency("USD")
		eur      = money.Currency("EUR")
	)
	cases := []struct {
		file       string
		paymentKey string
		created    int64
		facts      []delivery.Fact
	}{
		{"payment_intent.succeeded.json", pi, 1764410400, []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: ch, Amount: 2000, Currency: usd}}},
		{"payment_intent.amount_capturable_updated.json", piMan, 1764410500, []delivery.Fact{{Kind: delivery.KindAuthorized, Amount: 5000, Currency: eur}}},
		{"payment_intent.payment_failed.json", piFail, 1764410600, []delivery.Fact{{Kind: delivery.KindFailed, Amount: 1500, Currency: usd, Reason: "Your card has insufficient funds."}}},
		{"payment_intent.canceled.json", piMan, 1764410700, []delivery.Fact{{Kind: delivery.KindCanceled, Amount: 5000, Currency: eur, Reason: "requested_by_customer"}}},
		{"payment_intent.created.json", pi, 1764410398, nil},
		{"charge.succeeded.json", pi, 1764410399, []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: ch, Amount: 2000, Currency: usd}}},
		{"charge.succeeded.expanded_fee.json", pi, 1764410399, []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: ch, Amount: 2000, Fee: 88, Currency: usd}}},
		{"charge.succeeded.uncaptured.json", piMan, 1764410499, []delivery.Fact{{Kind: delivery.KindAuthorized, BusinessID: chMan, Amount: 5000, Currency: eur}}},
		{"charge.captured.json", piMan, 1764411000, []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: chMan, Amount: 4200, Currency: eur}}},
		{"charge.failed.json", piFail, 1764410598, []delivery.Fact{{Kind: delivery.KindFailed, BusinessID: "ch_3QxZ1C2eZvKYlo2C1dEcLiCh", Amount: 1500, Currency: usd, Reason: "Your card has insufficient funds."}}},
		// amount_refunded alone is cumulative: no facts, refund.* carry them.
		{"charge.refunded.json", pi, 1764496800, nil},
		{"charge.refunded.expanded.json", pi, 1764496800, []delivery.Fact{
			{Kind: delivery.KindRefunded, BusinessID: "re_3QxYzA2eZvKYlo2C1sEcOnD2", Amount: 1500, Currency: usd},
			{Kind: delivery.KindRefunded, BusinessID: "re_3QxYzA2eZvKYlo2C1fIrStR1", Amount: 500, Currency: usd},
		}},
		{"refund.created.json", pi, 1764496799, []delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: "re_3QxYzA2eZvKYlo2C1sEcOnD2", Amount: 1500, Currency: usd}}},
		{"refund.created.pending.json", pi, 1764496799, nil},
		{"refund.updated.json", pi, 1764500000, []delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: "re_3QxYzA2eZvKYlo2C1pEnDiNg", Amount: 100, Currency: usd}}},
		{"charge.refund.updated.json", pi, 1764500000, []delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: "re_3QxYzA2eZvKYlo2C1pEnDiNg", Amount: 100, Currency: usd}}},
		{"refund.failed.json", pi, 1764600000, []delivery.Fact{{Kind: delivery.KindRefundFailed, BusinessID: "re_3QxYzA2eZvKYlo2C1fAiLrEf", Amount: 700, Currency: usd, Reason: "expired_or_canceled_card"}}},
		{"refund.updated.canceled.json", pi, 1764600100, []delivery.Fact{{Kind: delivery.KindRefundFailed, BusinessID: "re_3QxYzA2eZvKYlo2C1cAnCeLr", Amount: 300, Currency: usd}}},
		{"charge.dispute.created.json", pi, 1764900001, []delivery.Fact{{Kind: delivery.KindDisputeOpened, BusinessID: du, Amount: 2000, Currency: usd, Reason: "fraudulent"}}},
		{"charge.dispute.closed.won.json", pi, 1765900000, []delivery.Fact{{Kind: delivery.KindDisputeWon, BusinessID: du, Amount: 2000, Currency: usd, Reason: "fraudulent"}}},
		{"charge.dispute.closed.lost.json", pi, 1765900001, []delivery.Fact{{Kind: delivery.KindDisputeLost, BusinessID: du, Amount: 2000, Currency: usd, Reason: "fraudulent"}}},
		// warning_closed: an inquiry closed without a chargeback. Won,
		// with nothing withdrawn, posts nothing (domain/payment).
		{"charge.dispute.closed.warning_closed.json", pi, 1765900002, []delivery.Fact{{Kind: delivery.KindDisputeWon, BusinessID: du, Amount: 2000, Currency: usd, Reason: "fraudulent"}}},
		{"charge.dispute.funds_withdrawn.json", pi, 1764900002, []delivery.Fact{{Kind: delivery.KindDisputeOpened, BusinessID: du, Amount: 2000, Currency: usd, Reason: "fraudulent"}}},
		{"charge.dispute.funds_reinstated.json", pi, 1765900003, []delivery.Fact{{Kind: delivery.KindDisputeFundsReinstated, BusinessID: du, Amount: 2000, Currency: usd, Reason: "fraudulent"}}},
		{"charge.dispute.created.inquiry.json", pi, 1764900001, []delivery.Fact{{Kind: delivery.KindDisputeInquiry, BusinessID: "du_1QyInQ2eZvKYlo2CiNqUiRy1", Amount: 2000, Currency: usd, Reason: "general"}}},
		{"charge.dispute.closed.inquiry_warning_closed.json", pi, 1765900100, []delivery.Fact{{Kind: delivery.KindDisputeWon, BusinessID: "du_1QyInQ2eZvKYlo2CiNqUiRy1", Amount: 2000, Currency: usd, Reason: "general"}}},
		{"payout.failed.json", "", 1765300000, []delivery.Fact{{Kind: delivery.KindPayoutFailed, BusinessID: "po_1QzPoU2eZvKYlo2CxPaYoUt1", Amount: 1912, Currency: usd, Reason: "The bank account has been closed."}}},
		{"payout.canceled.json", "", 1764920000, []delivery.Fact{{Kind: delivery.KindPayoutFailed, BusinessID: "po_1QzPcA2eZvKYlo2CcAnCeL01", Amount: 1912, Currency: usd, Reason: "canceled"}}},
		{"payout.paid.json", "", 1765000000, []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1QzPoU2eZvKYlo2CxPaYoUt1", Amount: 1912, Currency: usd,
			ArrivalDate: time.Unix(1765000000, 0).UTC(), // arrival_date: the provider's day, not the event's
			TraceID:     "021000021234567"}}},           // trace_id.status "supported": its value
		// payout.updated of a paid payout: another report of it, with the
		// trace id Stripe filled in since and its statement descriptor.
		{"payout.updated.json", "", 1765090000, []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1QzPoU2eZvKYlo2CxPaYoUt1", Amount: 1912, Currency: usd,
			ArrivalDate: time.Unix(1765000000, 0).UTC(), TraceID: "021000021234567", Descriptor: "ACME WEEKLY"}}},
		// Not paid yet (in_transit): nothing to record.
		{"payout.updated.in_transit.json", "", 1764950000, nil},
		{"customer.created.json", "", 1764410300, nil},
		// API version 2020-08-27: no latest_charge; the captured charge is
		// the succeeded entry of charges.data, not the declined attempt.
		{"payment_intent.succeeded.legacy_charges.json", "pi_1HhLfA2eZvKYlo2CzLeGaCy1", 1603972860, []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "ch_1HhLgB2eZvKYlo2CsUcCeSs1", Amount: 3500, Currency: eur}}},
		// Charges API, no PaymentIntent: keyed by the charge id throughout.
		{"charge.succeeded.legacy_no_pi.json", legacyCh, 1591200001, []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: legacyCh, Amount: 1200, Currency: usd}}},
		{"charge.refunded.legacy_no_pi.json", legacyCh, 1591300001, []delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: legacyRe, Amount: 500, Currency: usd}}},
		{"charge.refund.updated.legacy_no_pi.json", legacyCh, 1591300500, []delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: legacyRe, Amount: 500, Currency: usd}}},
		{"charge.dispute.created.legacy_no_pi.json", legacyCh, 1591400001, []delivery.Fact{{Kind: delivery.KindDisputeOpened, BusinessID: "du_1GsLeG2eZvKYlo2CdIsPuTe9", Amount: 700, Currency: usd, Reason: "product_not_received"}}},
	}
	a := newAdapter(t)
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			body := providertest.Fixture(t, tc.file)
			var hdr struct {
				ID   string `json:"id"`
				Type string `json:"type"`
			}
			require.NoError(t, json.Unmarshal(body, &hdr))
			ev := providertest.ParseOne(t, a, signed(body, secret, now))
			providertest.CheckEvent(t, tc.file, ev, providertest.Want{
				Provider: "stripe", DedupKey: hdr.ID, Type: hdr.Type, PaymentKey: tc.paymentKey, OccurredAt: time.Unix(tc.created, 0), Raw: body, Facts: tc.facts,
			})
			assert.Equal(t, len(tc.facts) == 0, ev.Ignored(), "Ignored() disagrees with facts")
		})
	}
}

// The same capture seen through charge.succeeded and payment_intent.succeeded
// must land on one stream with one business id, or the domain would count it twice.
func TestCaptureReportedTwiceAgrees(t *testing.T) {
	a := newAdapter(t)
	viaCharge := providertest.ParseOne(t, a, signed(providertest.Fixture(t, "charge.succeeded.json"), secret, now))
	viaPI := providertest.ParseOne(t, a, signed(providertest.Fixture(t, "payment_intent.succeeded.json"), secret, now))
	assert.Equal(t, viaPI.StreamID(), viaCharge.StreamID(), "streams differ")
	assert.Equal(t, viaPI.Facts[0], viaCharge.Facts[0], "facts differ")
	assert.Equal(t, "payment-stripe-pi_3QxYzA2eZvKYlo2C1PJqQe7b", viaCharge.StreamID(), "StreamID")
	payout := providertest.ParseOne(t, a, signed(providertest.Fixture(t, "payout.paid.json"), secret, now))
	assert.Equal(t, "payout-stripe-po_1QzPoU2eZvKYlo2CxPaYoUt1", payout.StreamID(), "payout StreamID")
}

// The fixtures must be shapes stripe-go itself decodes, and our reading of
// ids and amounts must agree with its typed one.
func TestFixturesAgreeWithStripeGoTypes(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err, "no fixtures")
	require.NotEmpty(t, files, "no fixtures")
	a := newAdapter(t)
	for _, f := range files {
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		var e stripego.Event
		require.NoErrorf(t, json.Unmarshal(body, &e), "%s: stripe-go cannot decode", f)
		ev := providertest.ParseOne(t, a, signed(body, secret, now))
		assert.Equalf(t, e.ID, ev.DedupKey, "%s: header fields disagree with stripe-go", f)
		assert.Equalf(t, string(e.Type), ev.Type, "%s: header fields disagree with stripe-go", f)
		assert.Equalf(t, e.Created, ev.OccurredAt.Unix(), "%s: header fields disagree with stripe-go", f)
		if ev.Ignored() {
			continue
		}
		fact := ev.Facts[0]
		var gotID string
		var gotAmount int64
		switch {
		case strings.HasPrefix(ev.Type, "payment_intent."):
			var pi stripego.PaymentIntent
			mustUnmarshal(t, e.Data.Raw, &pi)
			gotID = pi.ID
			switch fact.Kind {
			case delivery.KindCaptured:
				gotAmount = pi.AmountReceived
				// stripe-go no longer has the pre-2022-11-15 charges list.
				var legacy struct {
					Charges struct {
						Data []struct {
							ID     string `json:"id"`
							Status string `json:"status"`
						} `json:"data"`
					} `json:"charges"`
				}
				mustUnmarshal(t, e.Data.Raw, &legacy)
				switch {
				case pi.LatestCharge != nil:
					assert.Equalf(t, pi.LatestCharge.ID, fact.BusinessID, "%s: latest_charge disagrees", f)
				case len(legacy.Charges.Data) > 0:
					assert.Equalf(t, legacy.Charges.Data[0].ID, fact.BusinessID, "%s: charges.data disagrees", f)
					assert.Equalf(t, "succeeded", legacy.Charges.Data[0].Status, "%s: charges.data disagrees", f)
				default:
					assert.Failf(t, "captured without a charge", "%s", f)
				}
			case delivery.KindAuthorized:
				gotAmount = pi.AmountCapturable
			default:
				gotAmount = pi.Amount
			}
		case ev.Type == "charge.refunded":
			var ch stripego.Charge
			mustUnmarshal(t, e.Data.Raw, &ch)
			gotID = chargeKey(ch.PaymentIntent, ch.ID)
			gotAmount = ch.Refunds.Data[0].Amount
			assert.Equalf(t, ch.Refunds.Data[0].ID, fact.BusinessID, "%s: refund id disagrees", f)
		case strings.HasPrefix(ev.Type, "charge.dispute."):
			var du stripego.Dispute
			mustUnmarshal(t, e.Data.Raw, &du)
			gotID, gotAmount = chargeKey(du.PaymentIntent, du.Charge.ID), du.Amount
		case strings.HasPrefix(ev.Type, "charge.refund"), strings.HasPrefix(ev.Type, "refund."):
			var re stripego.Refund
			mustUnmarshal(t, e.Data.Raw, &re)
			gotID, gotAmount = chargeKey(re.PaymentIntent, re.Charge.ID), re.Amount
		case strings.HasPrefix(ev.Type, "charge."):
			var ch stripego.Charge
			mustUnmarshal(t, e.Data.Raw, &ch)
			gotID, gotAmount = chargeKey(ch.PaymentIntent, ch.ID), ch.Amount
			if ch.Captured {
				gotAmount = ch.AmountCaptured
			}
			if ch.BalanceTransaction != nil {
				assert.Equalf(t, ch.BalanceTransaction.Fee, fact.Fee, "%s: fee, against stripe-go", f)
			}
		case strings.HasPrefix(ev.Type, "payout."):
			var po stripego.Payout
			mustUnmarshal(t, e.Data.Raw, &po)
			assert.Equalf(t, po.ID, fact.BusinessID, "%s: payout id disagrees", f)
			gotAmount = po.Amount
		}
		if !strings.HasPrefix(ev.Type, "payout.") {
			assert.Equalf(t, gotID, ev.PaymentKey, "%s: payment key, against stripe-go", f)
		}
		assert.Equalf(t, gotAmount, fact.Amount, "%s: amount, against stripe-go", f)
	}
}

// chargeKey is the package doc's payment key rule, applied to stripe-go's
// typed objects: the PaymentIntent, else the charge.
func chargeKey(pi *stripego.PaymentIntent, chargeID string) string {
	if pi != nil {
		return pi.ID
	}
	return chargeID
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(b, v))
}

// ---------------------------------------------------------------------------
// Bad input: every error is a 400-class sentinel and names the field.

// mutate decodes a fixture, applies fn to it, and re-encodes it. Numbers stay
// json.Number so out-of-range literals survive the round trip.
func mutate(t *testing.T, file string, fn func(root map[string]any)) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(providertest.Fixture(t, file)))
	dec.UseNumber()
	var root map[string]any
	require.NoError(t, dec.Decode(&root))
	fn(root)
	b, err := json.Marshal(root)
	require.NoError(t, err)
	return b
}

func obj(root map[string]any) map[string]any {
	return root["data"].(map[string]any)["object"].(map[string]any)
}

func TestBadInput(t *testing.T) {
	set := func(file, field string, v any) []byte {
		return mutate(t, file, func(r map[string]any) { obj(r)[field] = v })
	}
	del := func(file, field string) []byte {
		return mutate(t, file, func(r map[string]any) { delete(obj(r), field) })
	}
	cases := []struct {
		name  string
		body  []byte
		want  error
		field string
	}{
		{"invalid JSON", []byte(`{"id": "evt_1",`), delivery.ErrMalformed, "invalid JSON"},
		{"trailing data", append(providertest.Fixture(t, "charge.succeeded.json"), []byte("{}")...), delivery.ErrMalformed, "invalid JSON"},
		{"not an object", []byte(`["evt_1"]`), delivery.ErrMalformed, "not a JSON object"},
		{"missing id", mutate(t, "charge.succeeded.json", func(r map[string]any) { delete(r, "id") }), delivery.ErrMissingField, "id"},
		{"empty id", mutate(t, "customer.created.json", func(r map[string]any) { r["id"] = "" }), delivery.ErrMissingField, "id"},
		{"numeric id", mutate(t, "charge.succeeded.json", func(r map[string]any) { r["id"] = json.Number("7") }), delivery.ErrMalformed, "id must be a string"},
		{"missing type", mutate(t, "charge.succeeded.json", func(r map[string]any) { delete(r, "type") }), delivery.ErrMissingField, "type"},
		{"missing created", mutate(t, "charge.succeeded.json", func(r map[string]any) { delete(r, "created") }), delivery.ErrMissingField, "created"},
		{"created not a number", mutate(t, "charge.succeeded.json", func(r map[string]any) { r["created"] = "today" }), delivery.ErrMalformed, "created"},
		{"missing data.object", mutate(t, "charge.succeeded.json", func(r map[string]any) { r["data"] = map[string]any{} }), delivery.ErrMissingField, "data.object"},
		{"data.object not an object", mutate(t, "charge.succeeded.json", func(r map[string]any) { r["data"] = map[string]any{"object": "ch_1"} }), delivery.ErrMalformed, "data.object must be an object"},
		{"pi succeeded without amount_received", del("payment_intent.succeeded.json", "amount_received"), delivery.ErrMissingField, "data.object.amount_received"},
		{"pi negative amount_received", set("payment_intent.succeeded.json", "amount_received", json.Number("-2000")), delivery.ErrInvalidAmount, "data.object.amount_received"},
		{"pi fractional amount", set("payment_intent.succeeded.json", "amount_received", json.Number("20.5")), delivery.ErrInvalidAmount, "data.object.amount_received"},
		{"pi exponent amount", set("payment_intent.succeeded.json", "amount_received", json.Number("2e3")), delivery.ErrInvalidAmount, "data.object.amount_received"},
		{"pi quoted amount", set("payment_intent.succeeded.json", "amount_received", "2000"), delivery.ErrInvalidAmount, "data.object.amount_received"},
		{"pi overflowing amount", set("payment_intent.succeeded.json", "amount_received", json.Number("9223372036854775808")), delivery.ErrInvalidAmount, "overflows"},
		{"pi unknown currency", set("payment_intent.succeeded.json", "currency", "xyz"), money.ErrUnknownCurrency, "data.object.currency"},
		{"pi missing currency", del("payment_intent.succeeded.json", "currency"), delivery.ErrMissingField, "data.object.currency"},
		{"pi missing id", del("payment_intent.succeeded.json", "id"), delivery.ErrMissingField, "data.object.id"},
		{"charge without payment_intent or id", mutate(t, "charge.succeeded.json", func(r map[string]any) {
			obj(r)["payment_intent"], obj(r)["id"] = nil, ""
		}), delivery.ErrMissingField, "data.object.payment_intent"},
		{"charge payment_intent a number", set("charge.succeeded.json", "payment_intent", json.Number("7")), delivery.ErrMalformed, "data.object.payment_intent"},
		{"charge without captured", del("charge.succeeded.json", "captured"), delivery.ErrMissingField, "data.object.captured"},
		{"charge captured not bool", set("charge.succeeded.json", "captured", "yes"), delivery.ErrMalformed, "data.object.captured"},
		{"charge negative amount_captured", set("charge.captured.json", "amount_captured", json.Number("-1")), delivery.ErrInvalidAmount, "data.object.amount_captured"},
		{"charge fee above amount", mutate(t, "charge.succeeded.expanded_fee.json", func(r map[string]any) {
			obj(r)["balance_transaction"].(map[string]any)["fee"] = json.Number("5000")
		}), delivery.ErrInvalidAmount, "fee"},
		{"charge negative fee", mutate(t, "charge.succeeded.expanded_fee.json", func(r map[string]any) {
			obj(r)["balance_transaction"].(map[string]any)["fee"] = json.Number("-1")
		}), delivery.ErrInvalidAmount, "data.object.balance_transaction.fee"},
		{"refund list entry without amount", mutate(t, "charge.refunded.expanded.json", func(r map[string]any) {
			delete(obj(r)["refunds"].(map[string]any)["data"].([]any)[0].(map[string]any), "amount")
		}), delivery.ErrMissingField, "data.object.refunds.data[0].amount"},
		{"refund list not a list", mutate(t, "charge.refunded.expanded.json", func(r map[string]any) {
			obj(r)["refunds"].(map[string]any)["data"] = "re_1"
		}), delivery.ErrMalformed, "data.object.refunds.data"},
		{"refund without payment_intent or charge", mutate(t, "refund.created.json", func(r map[string]any) {
			obj(r)["payment_intent"], obj(r)["charge"] = nil, nil
		}), delivery.ErrMissingField, "data.object.charge"},
		{"legacy refund, charge not an id", set("charge.refund.updated.legacy_no_pi.json", "charge", true), delivery.ErrMalformed, "data.object.charge"},
		{"refund negative amount", set("refund.created.json", "amount", json.Number("-1500")), delivery.ErrInvalidAmount, "data.object.amount"},
		{"refund unknown currency", set("refund.failed.json", "currency", "zzz"), money.ErrUnknownCurrency, "data.object.currency"},
		{"dispute without payment_intent or charge", mutate(t, "charge.dispute.created.json", func(r map[string]any) {
			obj(r)["payment_intent"], obj(r)["charge"] = nil, ""
		}), delivery.ErrMissingField, "data.object.payment_intent"},
		{"legacy pi, charges.data not a list", mutate(t, "payment_intent.succeeded.legacy_charges.json", func(r map[string]any) {
			obj(r)["charges"].(map[string]any)["data"] = "ch_1"
		}), delivery.ErrMalformed, "data.object.charges.data"},
		{"legacy pi, lone charge without id", mutate(t, "payment_intent.succeeded.legacy_charges.json", func(r map[string]any) {
			c := obj(r)["charges"].(map[string]any)
			c["data"] = c["data"].([]any)[:1]
			delete(c["data"].([]any)[0].(map[string]any), "id")
		}), delivery.ErrMissingField, "data.object.charges.data[0].id"},
		{"legacy pi, charges not an object", set("payment_intent.succeeded.legacy_charges.json", "charges", "ch_1"), delivery.ErrMalformed, "data.object.charges"},
		{"dispute without id", del("charge.dispute.closed.lost.json", "id"), delivery.ErrMissingField, "data.object.id"},
		{"payout without id", del("payout.paid.json", "id"), delivery.ErrMissingField, "data.object.id"},
		{"payout overflowing amount", set("payout.paid.json", "amount", json.Number("99999999999999999999999")), delivery.ErrInvalidAmount, "data.object.amount"},
	}
	a := newAdapter(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := a.Parse(signed(tc.body, secret, now))
			providertest.CheckFieldError(t, tc.name, evs, err, tc.want, tc.field)
		})
	}
}

// An expanded latest_charge (an object, not an id) is read through its id.
func TestExpandedReferences(t *testing.T) {
	body := mutate(t, "payment_intent.succeeded.json", func(r map[string]any) {
		obj(r)["latest_charge"] = map[string]any{
			"id": "ch_3QxYzA2eZvKYlo2C1kTq9v0W", "object": "charge",
			"balance_transaction": map[string]any{"id": "txn_1", "object": "balance_transaction", "fee": json.Number("88")},
		}
	})
	ev := providertest.ParseOne(t, newAdapter(t), signed(body, secret, now))
	assert.Equalf(t, "ch_3QxYzA2eZvKYlo2C1kTq9v0W", ev.Facts[0].BusinessID, "fact = %+v", ev.Facts[0])
	assert.Equalf(t, int64(88), ev.Facts[0].Fee, "fact = %+v", ev.Facts[0])
	body = mutate(t, "charge.succeeded.json", func(r map[string]any) {
		obj(r)["payment_intent"] = map[string]any{"id": "pi_expanded", "object": "payment_intent"}
	})
	ev = providertest.ParseOne(t, newAdapter(t), signed(body, secret, now))
	assert.Equal(t, "pi_expanded", ev.PaymentKey)
}

func TestSignFormat(t *testing.T) {
	h := stripe.Sign("whsec_x", time.Unix(1700000000, 0), []byte("{}"))
	require.Truef(t, strings.HasPrefix(h, "t=1700000000,v1="), "Sign = %q", h)
	sig, err := hex.DecodeString(strings.TrimPrefix(h, "t=1700000000,v1="))
	if assert.NoError(t, err, "Sign disagrees with webhook.ComputeSignature") {
		assert.Equal(t, webhook.ComputeSignature(time.Unix(1700000000, 0), []byte("{}"), "whsec_x"), sig, "Sign disagrees with webhook.ComputeSignature")
	}
}
