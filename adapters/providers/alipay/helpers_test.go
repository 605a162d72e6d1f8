package alipay

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

// The test's own Alipay: keys generated once per run (2048-bit generation
// is slow under -race), an app id, and a notification signer written
// independently of the adapter (it signs what Alipay's server signs:
// alipay-sdk-java-all AlipaySignature.getSignCheckContentV1 read backwards).
const appID = "2021000000000001"

var (
	keysOnce                   sync.Once
	alipayKey, nextKey, forger *rsa.PrivateKey
)

func testKeys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		gen := func() *rsa.PrivateKey {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			return k
		}
		alipayKey, nextKey, forger = gen(), gen(), gen()
	})
}

func spkiPEM(t testing.TB, k *rsa.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func pkcs1PEM(k *rsa.PublicKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(k)})
}

// certPEM is a public-key certificate for k signed by a throwaway CA, with
// the CA's certificate after it, as alipayCertPublicKey_RSA2.crt holds a
// chain.
func certPEM(t testing.TB, k *rsa.PrivateKey) []byte {
	t.Helper()
	ca, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test Alipay Root"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<33, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &ca.PublicKey, ca)
	require.NoError(t, err)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: appID}, NotBefore: time.Unix(0, 0),
		NotAfter: time.Unix(1<<33, 0)}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caTmpl, &k.PublicKey, ca)
	require.NoError(t, err)
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})...)
}

func newAdapter(t testing.TB, pems ...[]byte) *Adapter {
	t.Helper()
	testKeys(t)
	if len(pems) == 0 {
		pems = [][]byte{spkiPEM(t, &alipayKey.PublicKey)}
	}
	a, err := New(pems, []string{appID})
	require.NoError(t, err)
	return a
}

// kv is one notification parameter, in the order it is sent.
type kv struct{ k, v string }

// notification is a TRADE_SUCCESS notification's parameters; with replaces
// or adds parameters (an empty value removes one).
func notification(with ...kv) []kv {
	ps := []kv{
		{"gmt_create", "2026-11-29 10:00:00"}, {"charset", "utf-8"}, {"seller_email", "shop@example.com"},
		{"subject", "会员 12 个月"}, {"buyer_id", "2088102534368455"}, {"invoice_amount", "88.00"},
		{"notify_id", "2026112900222100000000000000000001"}, {"fund_bill_list", `[{"amount":"88.00","fundChannel":"ALIPAYACCOUNT"}]`},
		{"notify_type", "trade_status_sync"}, {"trade_status", "TRADE_SUCCESS"}, {"receipt_amount", "88.00"},
		{"buyer_pay_amount", "88.00"}, {"app_id", appID}, {"seller_id", "2088531891668739"},
		{"gmt_payment", "2026-11-29 10:00:05"}, {"notify_time", "2026-11-29 10:00:06"}, {"version", "1.0"},
		{"out_trade_no", "order-1"}, {"total_amount", "88.00"}, {"trade_no", "2026112922001400000000000001"},
		{"auth_app_id", appID}, {"buyer_logon_id", "xud***@126.com"}, {"point_amount", "0.00"},
	}
	for _, w := range with {
		found := false
		for i := range ps {
			if ps[i].k == w.k {
				ps[i].v, found = w.v, true
			}
		}
		if !found {
			ps = append(ps, w)
		}
	}
	out := ps[:0]
	for _, p := range ps {
		if p.v != "" {
			out = append(out, p)
		}
	}
	return out
}

// signOpts says how a test notification is signed and encoded.
type signOpts struct {
	key      *rsa.PrivateKey // nil: alipayKey
	signType string          // "": RSA2
	gbk      bool            // values encoded in GBK (and charset=gbk)
	literal  bool            // the sign's '+' sent as a literal '+', not %2B
}

// signedBody signs ps as Alipay does and encodes them as Alipay's server
// does (Java's URLEncoder: space as '+', '+' as %2B, everything else
// non-alphanumeric percent-encoded, url.QueryEscape's rules), sign and
// sign_type last.
func signedBody(t testing.TB, ps []kv, o signOpts) []byte {
	t.Helper()
	testKeys(t)
	if o.key == nil {
		o.key = alipayKey
	}
	if o.signType == "" {
		o.signType = "RSA2"
	}
	enc := func(s string) string { return s }
	if o.gbk {
		enc = func(s string) string {
			g, err := simplifiedchinese.GBK.NewEncoder().String(s)
			require.NoError(t, err)
			return g
		}
	}
	var content []string
	for _, p := range ps {
		if p.v != "" && p.k != "sign" && p.k != "sign_type" {
			content = append(content, p.k+"="+enc(p.v))
		}
	}
	sort.Strings(content)
	digest := sha256.Sum256([]byte(strings.Join(content, "&")))
	sig, err := rsa.SignPKCS1v15(rand.Reader, o.key, crypto.SHA256, digest[:])
	require.NoError(t, err)
	b64 := base64.StdEncoding.EncodeToString(sig)
	var parts []string
	for _, p := range ps {
		parts = append(parts, url.QueryEscape(p.k)+"="+url.QueryEscape(enc(p.v)))
	}
	signParam := url.QueryEscape(b64)
	if o.literal {
		signParam = strings.ReplaceAll(signParam, "%2B", "+")
	}
	parts = append(parts, "sign="+signParam, "sign_type="+o.signType)
	return []byte(strings.Join(parts, "&"))
}

func parse(a *Adapter, body []byte) ([]delivery.Event, error) {
	return a.Parse(providers.Request{Body: body, Now: time.Date(2026, 11, 29, 10, 0, 10, 0, time.UTC)})
}

// cst is a Beijing time as the UTC instant the events carry.
func cst(s string) time.Time {
	t, err := time.ParseInLocation(time.DateTime, s, time.FixedZone("CST", 8*3600))
	if err != nil {
		panic(err)
	}
	return t.UTC()
}
