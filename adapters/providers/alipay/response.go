package alipay

import (
	"crypto/rsa"
	"fmt"
)

// ResponseVerifier checks the RSA2 signature of an OpenAPI answer
// (settle sync alipay, adapters/providers/alipay/alipayapi) with Alipay's
// public keys, read as the notifications' keys are (ONCELEDGER_ALIPAY_PUBLIC_KEYS):
// Alipay signs its answers with the same key that signs its notifications.
type ResponseVerifier struct{ keys []*rsa.PublicKey }

// NewResponseVerifier reads the PEM keys (ReadKeyFiles); errors name the
// variable and the key.
func NewResponseVerifier(publicKeyPEMs [][]byte) (*ResponseVerifier, error) {
	v := &ResponseVerifier{}
	for i, pemBytes := range publicKeyPEMs {
		k, err := parsePublicKey(pemBytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: key %d: %v", ErrConfig, EnvPublicKeys, i+1, err)
		}
		v.keys = append(v.keys, k)
	}
	if len(v.keys) == 0 {
		return nil, fmt.Errorf("%w: %s: no Alipay public key configured", ErrConfig, EnvPublicKeys)
	}
	return v, nil
}

// Verify reports whether sig (the decoded base64 of the answer's "sign")
// is an RSA2 signature of content by one of the keys.
func (v *ResponseVerifier) Verify(content, sig []byte) bool { return verify(v.keys, content, sig) }
