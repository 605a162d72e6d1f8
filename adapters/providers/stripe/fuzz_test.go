package stripe_test

import (
	"encoding/hex"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// A correctly signed but absurd timestamp is still outside the window (the
// duration arithmetic saturates rather than wrapping into range).
func TestAbsurdSignedTimestamps(t *testing.T) {
	body := providertest.Fixture(t, "charge.succeeded.json")
	a := newAdapter(t)
	for _, ts := range []int64{math.MinInt64, math.MaxInt64, 0, -1, 1 << 62} {
		r := withHeader(body, signHeader(secret, ts, body))
		_, err := a.Parse(r)
		if assert.ErrorIsf(t, err, providers.ErrUnauthorized, "t=%d", ts) {
			assert.ErrorContainsf(t, err, "timestamp outside tolerance", "t=%d", ts)
		}
	}
}

func signHeader(secret string, ts int64, body []byte) string {
	sig := webhook.ComputeSignature(time.Unix(ts, 0), body, secret)
	return "t=" + strconv.FormatInt(ts, 10) + ",v1=" + hex.EncodeToString(sig)
}

// FuzzStripeParse: Parse never panics; a body signed by stripe-go either
// normalizes into a valid event or fails with a 400-class error; the same
// signature over any other body, and any header the fuzzer invents, is never
// accepted unless it carries the true signature.
func FuzzStripeParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(b, "t=1764410460,v1=00", byte(0))
	}
	f.Add([]byte(`{"id":"evt_1","type":"payout.paid","created":1,"data":{"object":{"id":"po_1","amount":-1,"currency":"usd"}}}`), "", byte(1))
	f.Add([]byte(`{"id":"evt_1","type":"charge.refunded","created":1,"data":{"object":{"payment_intent":"pi_1","refunds":{"data":[{"status":"succeeded","id":"re_1","amount":1e400,"currency":"usd"}]}}}}`), "t=1,v1=zz,v1=", byte(2))
	// Repeated keys, plain, escaped and nested, and a legacy charges list.
	f.Add([]byte(`{"id":"evt_1","id":"evt_2","type":"payout.paid","created":1,"data":{"object":{"id":"po_1","amount":1,"currency":"usd"}}}`), "", byte(5))
	f.Add([]byte(`{"id":"evt_1","type":"payout.paid","created":1,"data":{"object":{"id":"po_1","amount":1,"amount":2,"currency":"usd"}}}`), "", byte(6))
	f.Add([]byte(`{"id":"evt_1","type":"payment_intent.succeeded","created":1,"data":{"object":{"id":"pi_1","amount_received":5,"currency":"usd","charges":{"data":[{"id":"ch_1","status":"failed"},{"id":"ch_2","status":"succeeded","captured":true,"id":"ch_3"}]}}}}`), "", byte(7))
	f.Add([]byte(`{"id":"evt_1","type":"charge.dispute.created","created":1,"data":{"object":{"id":"du_1","amount":1,"currency":"usd","payment_intent":null,"charge":{"id":"ch_1"}}}}`), "", byte(8))
	f.Add([]byte(`null`), "t=,v1", byte(3))
	f.Add([]byte{}, ",,,", byte(4))

	a := newAdapter(f, oldSecret, secret)
	f.Fuzz(func(t *testing.T, body []byte, header string, flip byte) {
		// 1. Signed by the provider's library with a configured secret.
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now})
		h := http.Header{}
		h.Set("Stripe-Signature", sp.Header)
		evs, err := a.Parse(providers.Request{Header: h, Body: body, Now: now})
		if err != nil {
			require.NotErrorIs(t, err, providers.ErrUnauthorized, "signed body: unexpected error")
			require.Truef(t, providertest.Documented(err), "signed body: unexpected error %v", err)
		} else {
			require.Len(t, evs, 1, "events")
			ev := evs[0]
			require.NoError(t, ev.Validate(), "returned event does not validate")
			providertest.RequireBound(t, ev, "stripe", body)
		}

		// 2. The same header over a tampered body.
		tampered := providertest.Tampered(body, int(flip), 1<<(flip%8))
		_, err = a.Parse(providers.Request{Header: h, Body: tampered, Now: now})
		require.ErrorIs(t, err, providers.ErrUnauthorized, "tampered body accepted or misreported")

		// 3. A header the fuzzer made up: accepted only if it carries the
		// true signature for its own timestamp.
		h2 := http.Header{}
		h2.Set("Stripe-Signature", header)
		_, err = a.Parse(providers.Request{Header: h2, Body: body, Now: now})
		if err == nil {
			require.Truef(t, carriesTrueSignature(header, body), "header %q accepted without a valid signature", header)
		} else {
			require.Truef(t, providertest.Documented(err), "undocumented error %v", err)
		}
	})
}

// carriesTrueSignature is the fuzz oracle, independent of the verifier: the
// header names a timestamp and contains the real HMAC for it under one of the
// configured secrets.
func carriesTrueSignature(header string, body []byte) bool {
	lower := strings.ToLower(header)
	for _, part := range strings.Split(header, ",") {
		v, ok := strings.CutPrefix(strings.TrimSpace(part), "t=")
		if !ok {
			continue
		}
		ts, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		for _, s := range []string{secret, oldSecret} {
			if strings.Contains(lower, hex.EncodeToString(webhook.ComputeSignature(time.Unix(ts, 0), body, s))) {
				return true
			}
		}
	}
	return false
}
