package wechatpay

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"fmt"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Algorithm is the only resource encryption WeChat Pay API v3 uses.
const Algorithm = "AEAD_AES_256_GCM"

// APIv3KeySize is the length of an APIv3 key (APIv3密钥): 32 bytes, used as
// they are (not hex or base64) as the AES-256 key.
const APIv3KeySize = 32

// nonceSize is GCM's standard nonce, which WeChat uses ("随机串nonce长度12个
// 字节"). cipher.AEAD.Open panics on another length, so it is checked first.
const nonceSize = 12

// decryptor opens notification resources under any of the APIv3 keys.
type decryptor struct {
	aeads []cipher.AEAD
}

// newDecryptor accepts 32-byte keys only, unless testKeys, which also admits
// the 16- and 24-byte keys AES takes (AES-128/192-GCM): the published
// vector of wechatpay-go is encrypted under the 16-byte "testMchAPIv3Key0".
func newDecryptor(keys [][]byte, testKeys bool) (*decryptor, error) {
	d := &decryptor{}
	for i, k := range keys {
		if len(k) != APIv3KeySize && !(testKeys && (len(k) == 16 || len(k) == 24)) {
			return nil, fmt.Errorf("wechatpay: %s entry %d is %d bytes; an APIv3 key is %d", EnvAPIv3Keys, i+1, len(k), APIv3KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("wechatpay: %s entry %d: %w", EnvAPIv3Keys, i+1, err)
		}
		gcm, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("wechatpay: %s entry %d: %w", EnvAPIv3Keys, i+1, err)
		}
		d.aeads = append(d.aeads, gcm)
	}
	if len(d.aeads) == 0 {
		return nil, fmt.Errorf("wechatpay: no APIv3 key configured (%s)", EnvAPIv3Keys)
	}
	return d, nil
}

// open decrypts r with the first key whose tag verifies. Every failure is
// 401: a resource that no configured key opens was not encrypted for us.
func (d *decryptor) open(r Resource) ([]byte, error) {
	if r.Algorithm != Algorithm {
		return nil, providers.Unauthorized(fmt.Sprintf("resource.algorithm %q is not %s", clip(r.Algorithm), Algorithm))
	}
	if len(r.Nonce) != nonceSize {
		return nil, providers.Unauthorized(fmt.Sprintf("resource.nonce is %d bytes, not %d", len(r.Nonce), nonceSize))
	}
	ct, err := base64.StdEncoding.DecodeString(r.Ciphertext)
	if err != nil {
		return nil, providers.Unauthorized("resource.ciphertext is not base64")
	}
	for _, gcm := range d.aeads {
		if pt, err := gcm.Open(nil, []byte(r.Nonce), ct, []byte(r.AssociatedData)); err == nil {
			return pt, nil
		}
	}
	return nil, providers.Unauthorized("resource does not decrypt with any configured APIv3 key")
}
