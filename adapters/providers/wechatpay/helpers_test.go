package wechatpay

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Test keys and ids of our own: a platform certificate (self-signed, with
// the serial of WeChat's documentation example), a WeChat Pay public key,
// and a rogue key nobody configured.
const (
	certSerial = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
	pubKeyID   = "PUB_KEY_ID_0114232134912410000000000000"
	apiKey     = "0123456789abcdefghijklmnopqrstuv" // 32 bytes
	oldAPIKey  = "vutsrqponmlkjihgfedcba9876543210"
	mchID      = "1900000109"
	spMchID    = "1900000100"
	subMchID   = "1900000201"
	txID       = "4200000991202103266853086457"
	refundID   = "50001307732021032607480019805"
	notifyID   = "EV-2018022511223320873"
)

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

type testKeys struct {
	cert, pub, rogue *rsa.PrivateKey
	certPEM, pubPEM  []byte
}

var (
	keysOnce sync.Once
	keysVal  testKeys
	keysErr  error
)

func keys(t testing.TB) testKeys {
	t.Helper()
	keysOnce.Do(func() { keysVal, keysErr = makeKeys() })
	require.NoError(t, keysErr)
	return keysVal
}

// makeKeys reads the test keys from testdata (RSA-2048, made once with
// openssl genpkey; "TESTING KEY" blocks, as wechatpay-go spells its test
// key, so that no scanner takes them for leaked secrets): generating them
// would cost every fuzz worker seconds.
func makeKeys() (testKeys, error) {
	var k testKeys
	for name, p := range map[string]**rsa.PrivateKey{"cert": &k.cert, "pub": &k.pub, "rogue": &k.rogue} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".testkey"))
		if err != nil {
			return k, err
		}
		block, _ := pem.Decode(bytes.ReplaceAll(b, []byte("TESTING KEY"), []byte("PRIVATE KEY")))
		if block == nil {
			return k, errors.New("testdata/" + name + ".testkey is not PEM")
		}
		key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return k, err
		}
		var ok bool
		if *p, ok = key.(*rsa.PrivateKey); !ok {
			return k, errors.New("testdata/" + name + ".testkey is not an RSA key")
		}
	}
	serial, _ := new(big.Int).SetString(certSerial, 16)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Tenpay.com Root CA (test)"},
		NotBefore:    now.Add(-24 * time.Hour),
		NotAfter:     now.Add(5 * 365 * 24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.cert.PublicKey, k.cert)
	if err != nil {
		return k, err
	}
	k.certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	spki, err := x509.MarshalPKIXPublicKey(&k.pub.PublicKey)
	if err != nil {
		return k, err
	}
	k.pubPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki})
	return k, nil
}

func (k testKeys) config() map[string][]byte {
	return map[string][]byte{certSerial: k.certPEM, pubKeyID: k.pubPEM}
}

// adapter is configured with both kinds of key, two APIv3 keys and the
// direct merchant and the service provider; unknown records the serials
// OnUnknownSerial reported.
func adapter(t testing.TB, unknown *serials) *Adapter {
	t.Helper()
	var opts []Option
	if unknown != nil {
		opts = append(opts, OnUnknownSerial(unknown.add))
	}
	a, err := New(keys(t).config(), [][]byte{[]byte(apiKey), []byte(oldAPIKey)}, []string{mchID, " ", spMchID}, 0, opts...)
	require.NoError(t, err)
	return a
}

type serials struct {
	mu  sync.Mutex
	got []string
}

func (s *serials) add(serial string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, serial)
}

func (s *serials) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// encrypt is WeChat's side of the resource: AEAD_AES_256_GCM under key.
func encrypt(t testing.TB, key string, plaintext []byte, aad string) Resource {
	t.Helper()
	block, err := aes.NewCipher([]byte(key))
	require.NoError(t, err)
	gcm, err := cipher.NewGCM(block)
	require.NoError(t, err)
	nonce := "Kj7QIyUiYx1q" // 12 bytes of text, as WeChat sends it
	ct := gcm.Seal(nil, []byte(nonce), plaintext, []byte(aad))
	return Resource{OriginalType: "transaction", Algorithm: Algorithm, Ciphertext: base64.StdEncoding.EncodeToString(ct), AssociatedData: aad, Nonce: nonce}
}

// notification renders a body as WeChat Pay sends it, its content
// encrypted under key.
func notification(t testing.TB, key, id, eventType string, content any) []byte {
	t.Helper()
	pt, err := json.Marshal(content)
	require.NoError(t, err)
	return envelopeWith(t, id, eventType, encrypt(t, key, pt, "transaction"))
}

func envelopeWith(t testing.TB, id, eventType string, r Resource) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": id, "create_time": "2026-11-29T18:00:00+08:00", "resource_type": "encrypt-resource",
		"event_type": eventType, "summary": "支付成功", "resource": r,
	})
	require.NoError(t, err)
	return b
}

func sign(t testing.TB, k *rsa.PrivateKey, ts, nonce string, body []byte) string {
	t.Helper()
	sig, err := rsa.SignPKCS1v15(nil, k, crypto.SHA256, signedDigest(ts, nonce, body))
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(sig)
}

// signed is a delivery of body signed by k under serial at time at, received
// at now.
func signed(t testing.TB, k *rsa.PrivateKey, serial string, at time.Time, body []byte) providers.Request {
	t.Helper()
	ts, nonce := strconv.FormatInt(at.Unix(), 10), "593BEC0C930BF1AFEB40B4A08C8FB242"
	h := http.Header{}
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderNonce, nonce)
	h.Set(HeaderSerial, serial)
	h.Set(HeaderSignature, sign(t, k, ts, nonce, body))
	h.Set("Wechatpay-Signature-Type", "WECHATPAY2-SHA256-RSA2048")
	return providers.Request{Header: h, Body: body, Now: now}
}

// byCert is body signed now with the platform certificate's key.
func byCert(t testing.TB, body []byte) providers.Request {
	return signed(t, keys(t).cert, certSerial, now, body)
}

// transaction is a paid direct-merchant transaction's content.
func transaction(amount map[string]any) map[string]any {
	return map[string]any{
		"mchid": mchID, "appid": "wxd678efh567hg6787", "out_trade_no": "1217752501201407033233368018",
		"transaction_id": txID, "trade_type": "JSAPI", "trade_state": "SUCCESS", "trade_state_desc": "支付成功",
		"bank_type": "CMC", "success_time": "2026-11-29T17:59:58+08:00",
		"payer": map[string]any{"openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"}, "amount": amount,
	}
}

// refund is a direct-merchant refund's content with refund_status status.
func refund(status string, amount map[string]any) map[string]any {
	r := map[string]any{
		"mchid": mchID, "out_trade_no": "1217752501201407033233368018", "transaction_id": txID,
		"out_refund_no": "1217752501201407033233368018", "refund_id": refundID, "refund_status": status,
		"user_received_account": "招商银行信用卡0403", "amount": amount,
	}
	if status == "SUCCESS" {
		r["success_time"] = "2026-11-29T18:30:00+08:00"
	}
	return r
}

// with returns a copy of m with the members kv (key, value, …); a nil
// value deletes the member.
func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
