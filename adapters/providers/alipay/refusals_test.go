package alipay

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/domain/delivery"
)

func TestUnauthorized(t *testing.T) {
	a := newAdapter(t)
	good := signedBody(t, notification(), signOpts{})
	noSign := strings.Replace(string(good), "&sign=", "&sig=", 1)
	cases := map[string]struct {
		body   []byte
		reason string
	}{
		"forged by another key": {signedBody(t, notification(), signOpts{key: forger}), "does not verify"},
		"sign_type RSA":         {signedBody(t, notification(), signOpts{signType: "RSA"}), `sign_type "RSA" is not RSA2`},
		"sign_type rsa2":        {signedBody(t, notification(), signOpts{signType: "rsa2"}), "sign_type"},
		"no sign":               {[]byte(noSign), "no sign parameter"},
		"empty sign":            {[]byte(strings.Replace(string(good), "&sign=", "&sign=&x=", 1)), "no sign parameter"},
		"tampered value":        {[]byte(strings.Replace(string(good), "total_amount=88.00", "total_amount=8800.00", 1)), "does not verify"},
		"added parameter":       {append(append([]byte(nil), good...), "&refund_fee=88.00"...), "does not verify"},
		"removed parameter":     {[]byte(strings.Replace(string(good), "point_amount=0.00&", "", 1)), "does not verify"},
		"wrong app_id":          {signedBody(t, notification(kv{"app_id", "2021000000000999"}), signOpts{}), `app_id "2021000000000999" is not configured`},
		"no app_id":             {signedBody(t, notification(kv{"app_id", ""}), signOpts{}), `app_id "" is not configured`},
		"unsigned":              {encodeForm(notification()), "no sign parameter"},
		"empty body":            {nil, "no sign parameter"},
	}
	for name, c := range cases {
		providertest.CheckRefusal(t, a, name, providers.Request{Body: c.body}, c.reason)
	}
	bad := strings.Replace(string(good), "&sign=", "&sign=%40", 1)
	providertest.CheckRefusal(t, a, "sign not base64", providers.Request{Body: []byte(bad)}, "sign is not base64")

	// Tampering with any one byte of the body never verifies.
	for i := 0; i < len(good); i += 7 {
		evs, err := parse(a, providertest.Tampered(good, i, 0x01))
		if err == nil {
			t.Fatalf("byte %d tampered and accepted: %+v", i, evs)
		}
	}
}

func TestMalformed(t *testing.T) {
	a := newAdapter(t)
	cases := []struct {
		name  string
		body  []byte
		err   error
		field string
	}{
		{"missing notify_id", signedBody(t, notification(kv{"notify_id", ""}), signOpts{}), delivery.ErrMissingField, "notify_id"},
		{"missing notify_time", signedBody(t, notification(kv{"notify_time", ""}), signOpts{}), delivery.ErrMissingField, "notify_time"},
		{"missing trade_no", signedBody(t, notification(kv{"trade_no", ""}), signOpts{}), delivery.ErrMissingField, "trade_no"},
		{"missing trade_status", signedBody(t, notification(kv{"trade_status", ""}), signOpts{}), delivery.ErrMissingField, "trade_status"},
		{"missing total_amount", signedBody(t, notification(kv{"total_amount", ""}, kv{"receipt_amount", ""}), signOpts{}), delivery.ErrMissingField, "total_amount"},
		{"refund without out_biz_no", signedBody(t, notification(kv{"refund_fee", "1.00"}), signOpts{}), delivery.ErrMissingField, "out_biz_no"},
		{"three decimals", signedBody(t, notification(kv{"total_amount", "1.001"}, kv{"receipt_amount", ""}), signOpts{}), delivery.ErrInvalidAmount, "total_amount"},
		{"not a number", signedBody(t, notification(kv{"total_amount", "abc"}), signOpts{}), delivery.ErrInvalidAmount, "total_amount"},
		{"negative", signedBody(t, notification(kv{"total_amount", "-1.00"}), signOpts{}), delivery.ErrInvalidAmount, "total_amount"},
		{"negative refund", signedBody(t, notification(kv{"refund_fee", "-1.00"}, kv{"out_biz_no", "r"}), signOpts{}), delivery.ErrInvalidAmount, "refund_fee"},
		{"exponent", signedBody(t, notification(kv{"total_amount", "1e3"}), signOpts{}), delivery.ErrInvalidAmount, "total_amount"},
		{"huge", signedBody(t, notification(kv{"total_amount", "10000000000000.01"}, kv{"receipt_amount", ""}), signOpts{}), delivery.ErrInvalidAmount, "total_amount"},
		{"beyond int64", signedBody(t, notification(kv{"total_amount", "99999999999999999999.00"}), signOpts{}), delivery.ErrInvalidAmount, "total_amount"},
		{"receipt above total", signedBody(t, notification(kv{"receipt_amount", "88.01"}), signOpts{}), delivery.ErrInvalidAmount, "receipt_amount"},
		{"bad time", signedBody(t, notification(kv{"notify_time", "2026-11-29T10:00:06Z"}), signOpts{}), delivery.ErrMalformed, "notify_time"},
		{"control character in id", signedBody(t, notification(kv{"trade_no", "2026\x01"}), signOpts{}), delivery.ErrMalformed, "payment id"},
		{"unknown charset", signedBody(t, notification(kv{"charset", "latin1"}), signOpts{}), delivery.ErrMalformed, "charset"},
		{"invalid UTF-8", signedBody(t, notification(kv{"subject", "\xff\xfe"}), signOpts{}), delivery.ErrMalformed, "subject"},
		{"invalid GBK", signedBody(t, notification(kv{"charset", "gbk"}, kv{"subject", "\x81\x20"}), signOpts{}), delivery.ErrMalformed, "subject"},
		{"repeated parameter", append(signedBody(t, notification(), signOpts{}), "&trade_no=2"...), delivery.ErrMalformed, "trade_no"},
		{"raw non-ASCII", []byte("subject=会员&" + string(signedBody(t, notification(), signOpts{}))), delivery.ErrMalformed, "not form-encoded"},
		{"bad escape", []byte("subject=%zz&" + string(signedBody(t, notification(), signOpts{}))), delivery.ErrMalformed, "subject"},
		{"non-ASCII name", []byte("%E4%BC%9A=1&" + string(signedBody(t, notification(), signOpts{}))), delivery.ErrMalformed, "name"},
		{"empty name", []byte("=1&" + string(signedBody(t, notification(), signOpts{}))), delivery.ErrMalformed, "name"},
		{"too many parameters", []byte(strings.Repeat("a=1&", MaxParams) + string(signedBody(t, notification(), signOpts{}))), delivery.ErrMalformed, "form parameters"},
	}
	for _, c := range cases {
		evs, err := parse(a, c.body)
		providertest.CheckFieldError(t, c.name, evs, err, c.err, c.field)
	}
	// The body limit alone would allow far more: the count is checked
	// before any parameter is decoded.
	_, err := parseForm([]byte(strings.Repeat("&", 1<<20)))
	assert.ErrorIs(t, err, delivery.ErrMalformed)
}

// GBK: the values are signed in their charset's bytes (the Java SDK verifies
// content.getBytes(charset)) and decoded to UTF-8 for the ledger.
func TestGBK(t *testing.T) {
	a := newAdapter(t)
	for _, cs := range []string{"gbk", "GBK", "gb2312"} {
		body := signedBody(t, notification(kv{"charset", cs}, kv{"subject", "语雀空间 500人规模"}), signOpts{gbk: true})
		require.NotContains(t, string(body), "%E8%AF%AD", "the subject is sent in GBK, not UTF-8")
		n, ev := verified(t, a, body)
		assert.Equal(t, cs, n.Charset)
		assert.Equal(t, int64(8800), ev.Facts[0].Amount, cs)
	}
	// The same text signed as UTF-8 but labelled GBK does not decode.
	body := signedBody(t, notification(kv{"charset", "gbk"}, kv{"subject", "语雀空间"}), signOpts{})
	_, err := parse(a, body)
	assert.ErrorIs(t, err, delivery.ErrMalformed)
}

// A '+' in a value is a space (form rules: Alipay's encoder writes a space
// as '+', and signs the space); the signature's '+' arrives as %2B and, when
// a relay leaves it literal, is still a '+'.
func TestPlus(t *testing.T) {
	a := newAdapter(t)
	var withPlus []byte
	for i := 0; withPlus == nil; i++ {
		// A signature's base64 holds a '+' nearly always; vary the body
		// until it does, to test its encodings.
		ps := notification(kv{"subject", fmt.Sprintf("会员 a+b %d", i)})
		b := signedBody(t, ps, signOpts{})
		if strings.Contains(string(b), "%2B") && strings.Contains(string(b[strings.Index(string(b), "&sign="):]), "%2B") {
			withPlus = b
			literal := signedBody(t, ps, signOpts{literal: true})
			require.Contains(t, string(literal[strings.Index(string(literal), "&sign="):]), "+")
			_, err := parse(a, literal)
			assert.NoError(t, err, "a literal '+' in sign")
		}
	}
	_, err := parse(a, withPlus)
	require.NoError(t, err, "%2B in sign, a space as '+' and a '+' as %2B in a value")
	assert.Contains(t, string(withPlus), "subject=%E4%BC%9A%E5%91%98+a%2Bb+", "the value's space is sent as '+'")

	// A value's '+' read as a space changes the signed text: a body whose
	// "a+b" was sent literally is not what was signed.
	broken := strings.Replace(string(withPlus), "a%2Bb", "a+b", 1)
	_, err = parse(a, []byte(broken))
	assert.ErrorIs(t, err, providers.ErrUnauthorized)
}

func TestKeyRotationAndKinds(t *testing.T) {
	testKeys(t)
	rotating := newAdapter(t, spkiPEM(t, &alipayKey.PublicKey), pkcs1PEM(&nextKey.PublicKey))
	for name, k := range map[string]*rsa.PrivateKey{"current key": alipayKey, "next key": nextKey} {
		_, err := parse(rotating, signedBody(t, notification(), signOpts{key: k}))
		assert.NoError(t, err, name)
	}
	_, err := parse(rotating, signedBody(t, notification(), signOpts{key: forger}))
	assert.ErrorIs(t, err, providers.ErrUnauthorized, "a key that is not configured")

	cert := newAdapter(t, certPEM(t, nextKey))
	_, err = parse(cert, signedBody(t, notification(), signOpts{key: nextKey}))
	assert.NoError(t, err, "the key of a public-key certificate (chain after it)")
	_, err = parse(cert, signedBody(t, notification(), signOpts{key: alipayKey}))
	assert.ErrorIs(t, err, providers.ErrUnauthorized)
}

func TestConfiguration(t *testing.T) {
	testKeys(t)
	good := spkiPEM(t, &alipayKey.PublicKey)
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecDER, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	require.NoError(t, err)
	cases := []struct {
		name  string
		keys  [][]byte
		ids   []string
		wants string
	}{
		{"no key", nil, []string{appID}, EnvPublicKeys},
		{"not PEM", [][]byte{[]byte("not a key")}, []string{appID}, EnvPublicKeys + ": key 1"},
		{"bad DER", [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}})}, []string{appID}, EnvPublicKeys},
		{"private key", [][]byte{good, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})}, []string{appID}, EnvPublicKeys + ": key 2"},
		{"short key", [][]byte{spkiPEM(t, &small.PublicKey)}, []string{appID}, "1024-bit"},
		{"EC key", [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecDER})}, []string{appID}, "not an RSA key"},
		{"no app id", [][]byte{good}, nil, EnvAppIDs},
		{"blank app ids", [][]byte{good}, []string{" ", ""}, EnvAppIDs},
	}
	for _, c := range cases {
		a, err := New(c.keys, c.ids)
		assert.ErrorIs(t, err, ErrConfig, c.name)
		assert.ErrorContains(t, err, c.wants, c.name)
		assert.Nil(t, a, c.name)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "alipay.pem")
	require.NoError(t, os.WriteFile(path, good, 0o600))
	pems, err := ReadKeyFiles([]string{path})
	require.NoError(t, err)
	_, err = New(pems, []string{" " + appID + " "})
	assert.NoError(t, err)
	_, err = ReadKeyFiles([]string{filepath.Join(dir, "missing.pem")})
	assert.ErrorIs(t, err, ErrConfig)
	assert.ErrorContains(t, err, EnvPublicKeys)
}
