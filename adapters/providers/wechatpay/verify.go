package wechatpay

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
)

// PublicKeyIDPrefix begins the id of a WeChat Pay public key (微信支付公钥),
// as Wechatpay-Serial names it; a platform certificate's serial is hex.
const PublicKeyIDPrefix = "PUB_KEY_ID_"

// ProbePrefix begins the signature of WeChat Pay's probe notifications
// (签名探测): never valid.
const ProbePrefix = "WECHATPAY/SIGNTEST/"

// minRSABits is the smallest key accepted: WeChat signs with RSA-2048
// (SHA256-RSA2048).
const minRSABits = 2048

// verifier checks the Wechatpay-* signature of a notification.
type verifier struct {
	keys      map[string]*rsa.PublicKey // upper-cased serial or key id → key
	tolerance time.Duration
	onUnknown func(serial string)
}

func newVerifier(keys map[string][]byte, tolerance time.Duration, onUnknown func(string)) (*verifier, error) {
	v := &verifier{keys: map[string]*rsa.PublicKey{}, tolerance: tolerance, onUnknown: onUnknown}
	for name, pemBytes := range keys {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, errors.New("wechatpay: a key without its serial or PUB_KEY_ID_ id")
		}
		k, err := loadKey(name, pemBytes)
		if err != nil {
			return nil, err
		}
		id := strings.ToUpper(name)
		if _, dup := v.keys[id]; dup {
			return nil, fmt.Errorf("wechatpay: key %s is configured twice", name)
		}
		v.keys[id] = k
	}
	if len(v.keys) == 0 {
		return nil, fmt.Errorf("wechatpay: no platform certificate or WeChat Pay public key configured (%s)", EnvKeys)
	}
	return v, nil
}

// loadKey reads the RSA key that name (the Wechatpay-Serial value) names
// from one PEM block: a CERTIFICATE whose serial is name (as WeChat prints
// it, upper-case hex: fmt %X of the serial, as wechatpay-go
// utils.GetCertificateSerialNumber does), or a PUBLIC KEY (SPKI) under a
// PUB_KEY_ID_ name. A serial that does not match its certificate is refused
// here rather than found out as 401s.
func loadKey(name string, pemBytes []byte) (*rsa.PublicKey, error) {
	block, rest := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("wechatpay: key %s is not PEM", name)
	}
	if next, _ := pem.Decode(rest); next != nil {
		return nil, fmt.Errorf("wechatpay: key %s holds more than one PEM block; configure one file per key", name)
	}
	isID := strings.HasPrefix(strings.ToUpper(name), PublicKeyIDPrefix)
	var pub any
	switch block.Type {
	case "CERTIFICATE":
		if isID {
			return nil, fmt.Errorf("wechatpay: key %s is a certificate: a %s… id names a public key (PUBLIC KEY PEM)", name, PublicKeyIDPrefix)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("wechatpay: key %s: %w", name, err)
		}
		if serial := fmt.Sprintf("%X", cert.SerialNumber); !strings.EqualFold(serial, name) {
			return nil, fmt.Errorf("wechatpay: key %s is a certificate with serial %s", name, serial)
		}
		pub = cert.PublicKey
	case "PUBLIC KEY":
		if !isID {
			return nil, fmt.Errorf("wechatpay: key %s is a public key: configure it under its %s… id", name, PublicKeyIDPrefix)
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("wechatpay: key %s: %w", name, err)
		}
		pub = k
	default:
		return nil, fmt.Errorf("wechatpay: key %s is a %q PEM block, not a CERTIFICATE or PUBLIC KEY", name, block.Type)
	}
	k, ok := pub.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("wechatpay: key %s is not an RSA key", name)
	}
	if k.N.BitLen() < minRSABits {
		return nil, fmt.Errorf("wechatpay: key %s is RSA-%d; WeChat Pay signs with RSA-%d", name, k.N.BitLen(), minRSABits)
	}
	return k, nil
}

// header returns the one value of h's header name, or an error when it is
// missing, empty or repeated (two values would leave open which was signed).
func header(h http.Header, name string) (string, error) {
	vs := h.Values(name)
	switch {
	case len(vs) == 0 || vs[0] == "":
		return "", providers.Unauthorized("missing " + name + " header")
	case len(vs) > 1:
		return "", providers.Unauthorized("several " + name + " headers")
	}
	return vs[0], nil
}

// verify checks the signature, then the timestamp.
func (v *verifier) verify(h http.Header, body []byte, now time.Time) error {
	var vals [4]string
	for i, name := range []string{HeaderTimestamp, HeaderNonce, HeaderSignature, HeaderSerial} {
		s, err := header(h, name)
		if err != nil {
			return err
		}
		vals[i] = s
	}
	ts, nonce, sigB64, serial := vals[0], vals[1], vals[2], vals[3]
	if strings.HasPrefix(sigB64, ProbePrefix) {
		return providers.Unauthorized("signature probe (" + ProbePrefix + "): not a valid signature")
	}
	key, ok := v.keys[strings.ToUpper(serial)]
	if !ok {
		if v.onUnknown != nil {
			v.onUnknown(clip(serial))
		}
		return providers.Unauthorized(fmt.Sprintf("%s %q names no configured platform certificate or public key", HeaderSerial, clip(serial)))
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return providers.Unauthorized(HeaderSignature + " is not base64")
	}
	if rsa.VerifyPKCS1v15(key, crypto.SHA256, signedDigest(ts, nonce, body), sig) != nil {
		return providers.Unauthorized(HeaderSignature + " does not verify")
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return providers.Unauthorized(HeaderTimestamp + " is not a Unix time")
	}
	// Sub saturates instead of overflowing, so absurd timestamps still
	// compare. At exactly ±tolerance a delivery is accepted, as for every
	// provider here (wechatpay-go refuses at 5 minutes already: one second
	// of difference).
	if d := now.Sub(time.Unix(t, 0)); d > v.tolerance || d < -v.tolerance {
		return providers.Unauthorized("timestamp outside tolerance")
	}
	return nil
}

// signedDigest is the SHA-256 of the message WeChat Pay signs:
// timestamp\nnonce\nbody\n, over the body's bytes as received.
func signedDigest(ts, nonce string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(ts))
	h.Write([]byte{'\n'})
	h.Write([]byte(nonce))
	h.Write([]byte{'\n'})
	h.Write(body)
	h.Write([]byte{'\n'})
	return h.Sum(nil)
}
