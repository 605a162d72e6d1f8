package wechatpay

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// The published vector of the official Go SDK, wechatpay-apiv3/wechatpay-go
// (Apache-2.0): core/notify/notify_test.go, TestHandler_ParseNotifyRequest
// (platform certificate, headers, body, the APIv3 key "testMchAPIv3Key0"
// and the plaintext the resource decrypts to; the test fixes time.Now at
// 1624523846), and the matching private key, from
// core/auth/signers/sha256withrsa_signer_test.go (testPrivateKeyStr, a
// "TESTING KEY" block that is a PKCS#8 "PRIVATE KEY"). Copied byte for
// byte, the strings concatenated as there.
const (
	vectorAPIv3Key     = "testMchAPIv3Key0" // 16 bytes: a test key (AES-128-GCM)
	vectorSerial       = "D7CE59D1F522D701"
	vectorNonce        = "EcZ9Cmy4Xyx1i6RlJQzLcCyEqDa26NBz"
	vectorTimestamp    = "1624523846"
	vectorMchID        = "1234567890"
	vectorNotification = "3119dfba-e649-5eec-ab1e-3412bc4d2e17"
	vectorSignature    = "tJHIiIS9eB2hAYstmAmbbD3ZE5LiIm/Ug5tuL4fC0YOFRWIHV39UFIZXC0e9Wl6lBu6sKvkqDkzpqzBsVHyXF" +
		"lbYZTOQrVdG4b6LfTnK4mikv9++ixJMd3vTf2yCqvBkh98zs3Ds5zsYQakzbcwhmw4fMJs4nPLws28H0UW9FjDR//rxELLwXvV1VEA1I" +
		"BLX70xptjL8hrfUjEE8kkry6yNJTHZRU8CAc7qHli2Ng1V1qb9ARbK8A3ThmFmPQvRGrapI/jS2laKKgYUmfdEdkNO6B2Cke5e8VTxY4" +
		"06ArAmQ90GAihDwIcb16TQMnzCMBoutnwZKNiKRACrFmtxw2Q=="
	vectorBody = "{" +
		"\"id\":\"3119dfba-e649-5eec-ab1e-3412bc4d2e17\"," +
		"\"create_time\":\"2021-06-24T16:37:26+08:00\"," +
		"\"resource_type\":\"encrypt-resource\"," +
		"\"event_type\":\"PAYSCORE.USER_OPEN_SERVICE\"," +
		"\"summary\":\"签约成功\"," +
		"\"resource\":{" +
		"\"original_type\":\"payscore\"," +
		"\"algorithm\":\"AEAD_AES_256_GCM\"," +
		"\"ciphertext\":\"YDS3lKPaC4Y52Gf3uhft5qUBlIa8b428AWTtTauHQfQrRw+X1WpiuHIDy0vo1Vd6VEq67aVyqPdDYMkRVSDaZL3iZt" +
		"tevRMOoPKMifozg6XPWjIZumks/GpT48lI4NizyeaqLBokNebthah3o1H76qSlO9NkDjp9bzmKLEYYH9TEklFUpsvPqOTOcgSLgh21YJXYR" +
		"7dEBXFgRLiNIKRgO5JdXh1hccRUAlyVWxE54PXpnQ==\"," +
		"\"associated_data\":\"payscore\"," +
		"\"nonce\":\"Kj7QIyUiYx1q\"}" +
		"}"
	vectorPlaintext = "{" +
		"\"mchid\":\"1234567890\"," +
		"\"appid\":\"054aa7d7a2a54ab5898df65bd96f001c\"," +
		"\"create_time\":\"2020-06-30T12:12:00+08:00\"," +
		"\"out_contract_code\":\"21640bdbd08e473e828f3206a2741c6e\"" +
		"}"
	vectorCertificate = `-----BEGIN CERTIFICATE-----
MIIDVzCCAj+gAwIBAgIJANfOWdH1ItcBMA0GCSqGSIb3DQEBCwUAMEIxCzAJBgNV
BAYTAlhYMRUwEwYDVQQHDAxEZWZhdWx0IENpdHkxHDAaBgNVBAoME0RlZmF1bHQg
Q29tcGFueSBMdGQwHhcNMjEwNDI3MDg1NTIzWhcNMzEwNDI1MDg1NTIzWjBCMQsw
CQYDVQQGEwJYWDEVMBMGA1UEBwwMRGVmYXVsdCBDaXR5MRwwGgYDVQQKDBNEZWZh
dWx0IENvbXBhbnkgTHRkMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA
2VCTd91fnUn73Xy9DLvt/V62TVxRTEEstVdeRaZ3B3leO0pldE806mXO4RwdHXag
HQ4vGeZN0yqm++rDsGK+U3AH7kejyD2pXshNP9Cq5YwbptiLGtjcquw4HNxJQUOm
DeJf2vg6byms9RUipiq4SzbJKqJFlUpbuIPDpSpWz10PYmyCNeDGUUK65E5h2B83
4uxl1zNLYQCrkdBzb8oUxwYeP5a2DNxmjL5lsJML7DGr5znsevnoqGRwTm9fxCGf
y8wus7hwKz6clt3Whmmda7UAdb1c08hEQFVRbF14AR73xbnd8N0obCWJPCbzMCtk
aSef4FdEEgEXJiw0VAJT8wIDAQABo1AwTjAdBgNVHQ4EFgQUT1c7nd/SUO76HSoZ
umNUJv1R5PwwHwYDVR0jBBgwFoAUT1c7nd/SUO76HSoZumNUJv1R5PwwDAYDVR0T
BAUwAwEB/zANBgkqhkiG9w0BAQsFAAOCAQEAfTjxKRQMzNB/U6ZoCUS+BSNfa2Oh
0plMN6ZuzwiVVZwg1jywvv5yv04koS7Pd4i9E4gt9ZBUQXlpq+A3oOCEEHNRR6b2
kyazGRM7s0OP5X21WrbpSmKmU6K7hkfx30yYs08LVs/Q8DIhvaj1FCFeJzUCzYn/
fHMq4tsbKO0dKAeydPM/nrUZBmaYQVKMVOORGLFjFKVO7JV6Kq/R86ouhjEPgJOe
2xulNBUcjicqtZlBdEh/PWCYP2SpGVDclKm8jeo175T3EVAkdKzzmfpxtMmnMlmq
cTJOU9TxuGvNASMtjj7pYIerTx+xgZDXEVBWFW9PjJ0TV06tCRsgSHItgg==
-----END CERTIFICATE-----`
	vectorPrivateKey = `-----BEGIN TESTING KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDZUJN33V+dSfvd
fL0Mu+39XrZNXFFMQSy1V15FpncHeV47SmV0TzTqZc7hHB0ddqAdDi8Z5k3TKqb7
6sOwYr5TcAfuR6PIPaleyE0/0KrljBum2Isa2Nyq7Dgc3ElBQ6YN4l/a+DpvKaz1
FSKmKrhLNskqokWVSlu4g8OlKlbPXQ9ibII14MZRQrrkTmHYHzfi7GXXM0thAKuR
0HNvyhTHBh4/lrYM3GaMvmWwkwvsMavnOex6+eioZHBOb1/EIZ/LzC6zuHArPpyW
3daGaZ1rtQB1vVzTyERAVVFsXXgBHvfFud3w3ShsJYk8JvMwK2RpJ5/gV0QSARcm
LDRUAlPzAgMBAAECggEBAMc7rDeUaXiWv6bMGbZ3BTXpg1FhdddnWUnYE8HfX/km
OFI7XtBHXcgYFpcjYz4D5787pcsk7ezPidAj58zqenuclmjKnUmT3pfbI5eCA2v4
C9HnbYDrmUPK1ZcADtka4D6ScDccpNYNa1g2TFHzkIrEa6H+q7S3O2fqxY/DRVtN
0JIXalBb8daaqL5QVzSmM2BMVnHy+YITJWIkP2a3pKs9C0W65JGDsnG0wVrHinHF
+cnhFZIbaPEI//DAFMc9NkrWOKVRTEgcCUxCFaHOZVNxDWZD7A2ZfJB2rK6eg//y
gEiFDR2h6mTaDowMB4YF2n2dsIO4/dCG8vPHI20jn4ECgYEA/ZGu6lEMlO0XZnam
AZGtiNgLcCfM/C2ZERZE7QTRPZH1WdK92Al9ndldsswFw4baJrJLCmghjF/iG4zi
hhBvLnOLksnZUfjdumxoHDWXo2QBWbI5QsWIE7AuTiWgWj1I7X4fCXSQf6i+M/y2
6TogQ7d0ANpZFyOkTNMn/tiJvLECgYEA22XqlamG/yfAGWery5KNH2DGlTIyd6xJ
WtJ9j3jU99lZ0bCQ5xhiBbU9ImxCi3zgTsoqLWgA/p00HhNFNoUcTl9ofc0G3zwT
D1y0ZzcnVKxGJdZ6ohW52V0hJStAigtjYAsUgjm7//FH7PiQDBDP1Wa6xSRkDQU/
aSbQxvEE8+MCgYEA3bb8krW7opyM0XL9RHH0oqsFlVO30Oit5lrqebS0oHl3Zsr2
ZGgoBlWBsEzk3UqUhTFwm/DhJLTSJ/TQPRkxnhQ5/mewNhS9C7yua7wQkzVmWN+V
YeUGTvDGDF6qDz12/vJAgSwDDRym8x4NcXD5tTw7mmNRcwIfL22SkysThIECgYAV
BgccoEoXWS/HP2/u6fQr9ZIR6eV8Ij5FPbZacTG3LlS1Cz5XZra95UgebFFUHHtC
EY1JHJY7z8SWvTH8r3Su7eWNaIAoFBGffzqqSVazfm6aYZsOvRY6BfqPHT3p/H1h
Tq6AbBffxrcltgvXnCTORjHPglU0CjSxVs7awW3AEQKBgB5WtaC8VLROM7rkfVIq
+RXqE5vtJfa3e3N7W3RqxKp4zHFAPfr82FK5CX2bppEaxY7SEZVvVInKDc5gKdG/
jWNRBmvvftZhY59PILHO2X5vO4FXh7suEjy6VIh0gsnK36mmRboYIBGsNuDHjXLe
BDa+8mDLkWu5nHEhOxy2JJZl
-----END TESTING KEY-----`
)

// withTestAPIv3Keys admits the published vector's 16-byte APIv3 key.
func withTestAPIv3Keys() Option { return func(o *options) { o.testAPIv3Keys = true } }

var vectorNow = time.Unix(1624523846, 0)

func vectorHeaders(serial string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderNonce, vectorNonce)
	h.Set(HeaderTimestamp, vectorTimestamp)
	h.Set(HeaderSerial, serial)
	h.Set(HeaderSignature, vectorSignature)
	return h
}

func vectorKeys() map[string][]byte {
	return map[string][]byte{vectorSerial: []byte(vectorCertificate)}
}

// The published private key signs the published message into the
// published signature (PKCS#1 v1.5 is deterministic): the signed message
// is built as WeChat builds it.
func TestPublishedVectorSignature(t *testing.T) {
	block, _ := pem.Decode([]byte(strings.ReplaceAll(vectorPrivateKey, "TESTING KEY", "PRIVATE KEY")))
	require.NotNil(t, block)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	sig, err := rsa.SignPKCS1v15(nil, k.(*rsa.PrivateKey), crypto.SHA256, signedDigest(vectorTimestamp, vectorNonce, []byte(vectorBody)))
	require.NoError(t, err)
	assert.Equal(t, vectorSignature, base64.StdEncoding.EncodeToString(sig))
}

func TestPublishedVectorVerifier(t *testing.T) {
	v, err := newVerifier(vectorKeys(), DefaultTolerance, nil)
	require.NoError(t, err)
	for _, serial := range []string{vectorSerial, strings.ToLower(vectorSerial)} {
		assert.NoError(t, v.verify(vectorHeaders(serial), []byte(vectorBody), vectorNow), serial)
	}
	assert.NoError(t, v.verify(vectorHeaders(vectorSerial), []byte(vectorBody), vectorNow.Add(DefaultTolerance)), "at the edge of the window")
	err = v.verify(vectorHeaders(vectorSerial), []byte(vectorBody), vectorNow.Add(DefaultTolerance+time.Second))
	assert.ErrorContains(t, err, "timestamp outside tolerance", "the wall clock, years later")
	err = v.verify(vectorHeaders(vectorSerial), []byte(vectorBody+" "), vectorNow)
	assert.ErrorIs(t, err, providers.ErrUnauthorized, "a byte more")
}

func TestPublishedVectorDecryptor(t *testing.T) {
	n, err := decodeEnvelope([]byte(vectorBody))
	require.NoError(t, err)
	d, err := newDecryptor([][]byte{[]byte(vectorAPIv3Key)}, true)
	require.NoError(t, err)
	pt, err := d.open(n.Resource)
	require.NoError(t, err)
	assert.Equal(t, vectorPlaintext, string(pt))

	_, err = newDecryptor([][]byte{[]byte(vectorAPIv3Key)}, false)
	assert.ErrorContains(t, err, EnvAPIv3Keys, "configuration takes 32-byte keys only")
}

// Through Parse, with the clock fixed: a PAYSCORE notification is a type
// this adapter does not handle, so it is an ignored delivery, bound to the
// bytes received.
func TestPublishedVectorParse(t *testing.T) {
	a, err := New(vectorKeys(), [][]byte{[]byte(vectorAPIv3Key)}, []string{vectorMchID}, 0, withTestAPIv3Keys())
	require.NoError(t, err)
	req := providers.Request{Header: vectorHeaders(vectorSerial), Body: []byte(vectorBody), Now: vectorNow}
	ev := providertest.ParseOne(t, a, req)
	providertest.CheckEvent(t, "vector", ev, providertest.Want{
		Provider: Name, DedupKey: vectorNotification, Type: "PAYSCORE.USER_OPEN_SERVICE",
		OccurredAt: time.Date(2021, 6, 24, 8, 37, 26, 0, time.UTC), Raw: []byte(vectorBody),
	})
	n, err := a.Notification(req)
	require.NoError(t, err)
	assert.Equal(t, vectorPlaintext, string(n.Plaintext))
	assert.Equal(t, Merchant{MchID: vectorMchID}, n.Merchant)
	assert.Equal(t, "签约成功", n.Summary)

	other, err := New(vectorKeys(), [][]byte{[]byte(vectorAPIv3Key)}, []string{"1900000109"}, 0, withTestAPIv3Keys())
	require.NoError(t, err)
	providertest.CheckRefusal(t, other, "another merchant's", req, "not a configured merchant")
	req.Now = time.Time{} // the wall clock: years after the vector
	providertest.CheckRefusal(t, a, "stale", req, "timestamp outside tolerance")
}
