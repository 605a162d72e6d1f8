package sign

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Alipay signs asynchronous notifications as Alipay does (docs/providers.md):
// every parameter except sign and sign_type, empty values left out, sorted
// by key, "k=v" joined by '&', RSA PKCS #1 v1.5 over SHA-256 with the
// private key whose public half the server trusts
// (ONCELEDGER_ALIPAY_PUBLIC_KEYS).
type Alipay struct{ key *rsa.PrivateKey }

// NewAlipay signs with key.
func NewAlipay(key *rsa.PrivateKey) *Alipay { return &Alipay{key: key} }

// Body returns params, signed (sign, sign_type=RSA2), form-encoded: the
// bytes Alipay POSTs to notify_url.
func (a *Alipay) Body(params map[string]string) ([]byte, error) {
	keys := make([]string, 0, len(params))
	for k, v := range params {
		if k != "sign" && k != "sign_type" && v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var content strings.Builder
	form := url.Values{}
	for i, k := range keys {
		if i > 0 {
			content.WriteByte('&')
		}
		content.WriteString(k + "=" + params[k])
		form.Set(k, params[k])
	}
	sum := sha256.Sum256([]byte(content.String()))
	sig, err := rsa.SignPKCS1v15(nil, a.key, crypto.SHA256, sum[:])
	if err != nil {
		return nil, fmt.Errorf("%w: alipay: %v", ErrBadSecret, err)
	}
	form.Set("sign", base64.StdEncoding.EncodeToString(sig))
	form.Set("sign_type", "RSA2")
	return []byte(form.Encode()), nil
}

// Wechatpay builds WeChat Pay API v3 notifications (docs/providers.md): the
// content encrypted with AEAD_AES_256_GCM under the 32-byte APIv3 key, the
// body signed with SHA256withRSA over "timestamp\nnonce\nbody\n" by the key
// Serial names (ONCELEDGER_WECHATPAY_KEYS).
type Wechatpay struct {
	key    *rsa.PrivateKey
	serial string
	gcm    cipher.AEAD
}

// NewWechatpay signs with key under serial and encrypts with apiV3Key.
func NewWechatpay(key *rsa.PrivateKey, serial, apiV3Key string) (*Wechatpay, error) {
	if len(apiV3Key) != 32 {
		return nil, fmt.Errorf("%w: a WeChat Pay APIv3 key is 32 bytes", ErrBadSecret)
	}
	block, err := aes.NewCipher([]byte(apiV3Key))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSecret, err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSecret, err)
	}
	return &Wechatpay{key: key, serial: serial, gcm: gcm}, nil
}

// Body returns the notification id of eventType whose decrypted resource is
// content, created at ts.
func (w *Wechatpay) Body(id, eventType string, ts time.Time, content any) ([]byte, error) {
	pt, err := json.Marshal(content)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 6)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	n := hex.EncodeToString(nonce) // 12 bytes of text, as WeChat sends it
	ct := w.gcm.Seal(nil, []byte(n), pt, []byte("transaction"))
	return json.Marshal(map[string]any{
		"id": id, "create_time": ts.UTC().Format(time.RFC3339), "resource_type": "encrypt-resource",
		"event_type": eventType, "summary": "通知",
		"resource": map[string]any{"original_type": "transaction", "algorithm": "AEAD_AES_256_GCM",
			"ciphertext": base64.StdEncoding.EncodeToString(ct), "associated_data": "transaction", "nonce": n},
	})
}

// Headers sets the Wechatpay-* headers of body sent at ts on h.
func (w *Wechatpay) Headers(h http.Header, ts time.Time, body []byte) error {
	t := strconv.FormatInt(ts.Unix(), 10)
	nonceB := make([]byte, 16)
	if _, err := rand.Read(nonceB); err != nil {
		return err
	}
	nonce := strings.ToUpper(hex.EncodeToString(nonceB))
	sum := sha256.Sum256([]byte(t + "\n" + nonce + "\n" + string(body) + "\n"))
	sig, err := rsa.SignPKCS1v15(nil, w.key, crypto.SHA256, sum[:])
	if err != nil {
		return fmt.Errorf("%w: wechatpay: %v", ErrBadSecret, err)
	}
	h.Set("Wechatpay-Timestamp", t)
	h.Set("Wechatpay-Nonce", nonce)
	h.Set("Wechatpay-Serial", w.serial)
	h.Set("Wechatpay-Signature", base64.StdEncoding.EncodeToString(sig))
	h.Set("Wechatpay-Signature-Type", "WECHATPAY2-SHA256-RSA2048")
	return nil
}

// ParseRSAPrivateKey reads a PEM RSA private key, PKCS #8 ("PRIVATE KEY",
// what openssl genpkey writes) or PKCS #1 ("RSA PRIVATE KEY"): the key
// whose public half the server is configured with.
func ParseRSAPrivateKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: no PEM block", ErrBadSecret)
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSecret, err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: a %T, not an RSA key", ErrBadSecret, k)
	}
	return rk, nil
}
