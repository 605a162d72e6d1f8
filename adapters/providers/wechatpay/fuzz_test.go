package wechatpay

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// FuzzParse: Parse never panics and never accepts what WeChat Pay did not
// sign. A body signed with a configured key either normalizes into a valid
// event bound to it or fails with a documented error; the same headers over
// a tampered body, and signature and serial headers the fuzzer invents, are
// refused unless they carry the true signature of a configured key.
func FuzzParse(f *testing.F) {
	k := keys(f)
	for _, body := range [][]byte{
		notification(f, apiKey, notifyID, EventTransactionSuccess, transaction(cents)),
		notification(f, oldAPIKey, notifyID, EventRefundSuccess, refund("SUCCESS", map[string]any{"total": 100, "refund": 1})),
		notification(f, apiKey, notifyID, EventRefundClosed, refund("CLOSED", map[string]any{"refund": 1})),
		notification(f, apiKey, notifyID, EventRefundAbnormal, refund("ABNORMAL", map[string]any{"refund": 1})),
		notification(f, apiKey, notifyID, EventTransactionSuccess, with(transaction(cents), "mchid", nil, "sp_mchid", spMchID, "sub_mchid", subMchID)),
		notification(f, apiKey, notifyID, EventTransactionSuccess, transaction(map[string]any{"total": 1e18})),
		[]byte(vectorBody),
		[]byte(`{"id":"x","id":"y"}`),
		{},
	} {
		const nonce = "593BEC0C930BF1AFEB40B4A08C8FB242"
		f.Add(body, int64(0), nonce, sign(f, k.cert, strconv.FormatInt(now.Unix(), 10), nonce, body), certSerial, byte(0))
	}
	f.Add([]byte(`{}`), int64(301), "", ProbePrefix+"x", pubKeyID, byte(3))
	f.Add([]byte(`[]`), int64(-301), "\n", "====", strings.ToLower(certSerial), byte(7))
	a := adapter(f, nil)
	f.Fuzz(func(t *testing.T, body []byte, skew int64, nonce, sigHeader, serial string, flip byte) {
		at := now.Add(time.Duration(skew%1000) * time.Second)
		ts := strconv.FormatInt(at.Unix(), 10)

		// 1. Signed with the platform certificate's key.
		req := signed(t, k.cert, certSerial, at, body)
		req.Header.Set(HeaderNonce, nonce)
		req.Header.Set(HeaderSignature, sign(t, k.cert, ts, nonce, body))
		evs, err := a.Parse(req)
		switch {
		case err == nil:
			require.Len(t, evs, 1)
			require.NoError(t, evs[0].Validate(), "returned event does not validate")
			providertest.RequireBound(t, evs[0], Name, body)
			require.NotEmpty(t, nonce, "accepted without a nonce")
		case errors.Is(err, providers.ErrUnauthorized):
		default:
			require.Truef(t, providertest.Documented(err), "undocumented error %v", err)
		}

		// 2. The same headers over a tampered body.
		tampered := req
		tampered.Body = providertest.Tampered(body, int(flip), 1<<(flip%8))
		_, err = a.Parse(tampered)
		require.ErrorIs(t, err, providers.ErrUnauthorized, "tampered body accepted or misreported")

		// 3. A signature and serial the fuzzer made up.
		req.Header.Set(HeaderSignature, sigHeader)
		req.Header.Set(HeaderSerial, serial)
		if _, err := a.Parse(req); !errors.Is(err, providers.ErrUnauthorized) {
			require.Truef(t, carriesTrueSignature(k, serial, sigHeader, ts, nonce, body),
				"serial %q signature %q accepted without a valid signature (err %v)", serial, sigHeader, err)
		}
	})
}

// carriesTrueSignature is the fuzz oracle, independent of the verifier:
// PKCS#1 v1.5 signatures are deterministic, so the one signature that
// verifies is the one the configured key makes.
func carriesTrueSignature(k testKeys, serial, header, ts, nonce string, body []byte) bool {
	var key *rsa.PrivateKey
	switch strings.ToUpper(serial) {
	case certSerial:
		key = k.cert
	case pubKeyID:
		key = k.pub
	default:
		return false
	}
	got, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return false
	}
	want, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, signedDigest(ts, nonce, body))
	return err == nil && bytes.Equal(got, want)
}
