package alipay

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// The configuration variables the adapter is built from, named in
// configuration errors.
const (
	EnvPublicKeys = "ONCELEDGER_ALIPAY_PUBLIC_KEYS"
	EnvAppIDs     = "ONCELEDGER_ALIPAY_APP_IDS"
)

// ErrConfig is wrapped by every configuration error of New and ReadKeyFiles.
var ErrConfig = errors.New("alipay: bad configuration")

// minKeyBits: Alipay's RSA2 keys are 2048 bits; a shorter key is a
// configuration mistake (or the retired RSA scheme's 1024-bit key).
const minKeyBits = 2048

// ReadKeyFiles reads the PEM files ONCELEDGER_ALIPAY_PUBLIC_KEYS names, for
// New. An error names the variable and the file.
func ReadKeyFiles(paths []string) ([][]byte, error) {
	out := make([][]byte, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, EnvPublicKeys, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// parsePublicKey reads one configured key: a PEM "PUBLIC KEY" (SPKI, what
// Alipay's console downloads), "RSA PUBLIC KEY" (PKCS #1) or "CERTIFICATE"
// (Alipay's public-key certificate, alipayCertPublicKey_RSA2.crt, in
// certificate mode: its public key signs the notifications). Of a file with
// several blocks the first is the key, as alipay-sdk-nodejs-all's
// loadPublicKey (@fidm/x509 Certificate.fromPEM) and the Java SDK read it:
// the blocks after it are the chain, whose keys do not sign notifications.
// A file holding the bare base64 SPKI, as Alipay's console displays it, is
// read too. The certificate chain is not checked: configuring the file is
// the trust decision, as in both SDKs.
func parsePublicKey(data []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(data)
	var pub any
	var err error
	switch {
	case block == nil:
		der, derr := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(data)))
		if derr != nil || len(der) == 0 {
			return nil, errors.New("no PEM block and not a base64 public key")
		}
		pub, err = x509.ParsePKIXPublicKey(der)
	case block.Type == "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(block.Bytes)
	case block.Type == "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case block.Type == "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			pub = cert.PublicKey
		}
	default:
		return nil, fmt.Errorf("PEM block %q is not a PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", block.Type)
	}
	if err != nil {
		return nil, err
	}
	key, ok := pub.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an RSA key (RSA2 is RSA)", pub)
	}
	if key.N.BitLen() < minKeyBits {
		return nil, fmt.Errorf("a %d-bit RSA key, shorter than %d bits", key.N.BitLen(), minKeyBits)
	}
	return key, nil
}

// verify reports whether sig is an RSA2 signature (PKCS #1 v1.5, SHA-256)
// of content by any of keys: several keys are configured while Alipay's key
// is rotated.
func verify(keys []*rsa.PublicKey, content, sig []byte) bool {
	digest := sha256.Sum256(content)
	for _, k := range keys {
		if rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil {
			return true
		}
	}
	return false
}
