package standard_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// FuzzStandardParse: Parse never panics; a body signed by the reference
// library either normalizes into a valid event or fails with a 400-class
// error; the same headers over a tampered body, and signature headers the
// fuzzer invents, are never accepted unless they carry the true signature.
func FuzzStandardParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(b, msgID, "v1,AAAA", byte(0))
	}
	f.Add([]byte(`{"type":"payment.captured","timestamp":"2026-11-29T10:00:00Z","data":{"payment_id":"p","capture_id":"c","amount":10,"currency":"USD","fee":11}}`), "msg_x", "v1,", byte(1))
	f.Add([]byte(`{"type":"payout.paid","timestamp":"9999-12-31T23:59:59Z","data":{"payout_id":"po","amount":1e999,"currency":"usd"}}`), "", "v1a,xyz v1,==", byte(2))
	f.Add([]byte(`[]`), "msg with spaces", " ", byte(3))
	f.Add([]byte(`{"type":"payment.captured","timestamp":"2026-11-29T10:00:00Z","data":{"payment_id":"p","capture_id":"c","amount":1,"amount":2,"currency":"USD"}}`), "msg_dup", "v1,", byte(5))
	f.Add([]byte(`{"type":"refund.succeeded","type":"payment.captured","timestamp":"2026-11-29T10:00:00Z","data":{"payment_id":"p","refund_id":"r","amount":1,"currency":"USD","Amount":2,"x":{"y":[{"z":1,"z":2}]}}}`), "msg_dup2", "v1,", byte(6))
	f.Add([]byte{}, "m", "v1,"+strings.Repeat("A", 44), byte(4))

	a := newAdapter(f, oldSecret, secret)
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, body []byte, id string, sigHeader string, flip byte) {
		// 1. Signed by the reference library.
		sig, err := wh.Sign(id, now, body)
		require.NoError(t, err)
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		h.Set("webhook-signature", sig)
		validID := id != "" // an empty id is a missing header
		evs, err := a.Parse(providers.Request{Header: h, Body: body, Now: now})
		switch {
		case err == nil:
			require.Len(t, evs, 1, "events")
			ev := evs[0]
			require.NoError(t, ev.Validate(), "returned event does not validate")
			providertest.RequireBound(t, ev, "standard", body)
			require.Equalf(t, id, ev.DedupKey, "event not bound to the verified delivery: %+v", ev)
		case errors.Is(err, providers.ErrUnauthorized):
			require.Falsef(t, validID, "reference signature rejected: %v", err)
		default:
			require.Truef(t, providertest.Documented(err), "undocumented error %v", err)
		}

		// 2. The same headers over a tampered body.
		tampered := providertest.Tampered(body, int(flip), 1<<(flip%8))
		_, err = a.Parse(providers.Request{Header: h, Body: tampered, Now: now})
		require.ErrorIs(t, err, providers.ErrUnauthorized, "tampered body accepted or misreported")

		// 3. A signature header the fuzzer made up.
		h.Set("webhook-signature", sigHeader)
		if _, err := a.Parse(providers.Request{Header: h, Body: body, Now: now}); !errors.Is(err, providers.ErrUnauthorized) {
			require.Truef(t, carriesTrueSignature(sigHeader, id, body), "signature header %q accepted without a valid signature (err %v)", sigHeader, err)
		}
	})
}

// carriesTrueSignature is the fuzz oracle, independent of the verifier: some
// v1 entry decodes to the real HMAC under a configured secret.
func carriesTrueSignature(header, id string, body []byte) bool {
	for _, s := range []string{secret, oldSecret} {
		wh, _ := standardwebhooks.NewWebhook(s)
		want, _ := wh.Sign(id, now, body)
		wantRaw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(want, "v1,"))
		for _, e := range strings.Fields(header) {
			v, ok := strings.CutPrefix(e, "v1,")
			if !ok {
				continue
			}
			if raw, err := base64.StdEncoding.DecodeString(v); err == nil && bytes.Equal(raw, wantRaw) {
				return true
			}
		}
	}
	return false
}
