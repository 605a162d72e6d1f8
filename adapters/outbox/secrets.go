package outbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrNoSecretsKey: a subscription needs its signing secret encrypted at
// rest, and ONCELEDGER_SECRETS_KEY is not set.
var ErrNoSecretsKey = errors.New("ONCELEDGER_SECRETS_KEY is not set: it encrypts subscription signing secrets at rest (32 bytes, hex or base64)")

// ErrBadSecretsKey: ONCELEDGER_SECRETS_KEY is not 32 bytes of hex or base64,
// or a sealed secret does not open with it.
var ErrBadSecretsKey = errors.New("bad ONCELEDGER_SECRETS_KEY")

// SecretPrefix starts every signing secret (Standard Webhooks: "whsec_"
// then the base64 key).
const SecretPrefix = "whsec_"

// Sealer encrypts signing secrets at rest with AES-256-GCM: HMAC needs the
// secret itself, so it cannot be hashed like a password. A sealed secret is
// the random 12-byte nonce followed by the ciphertext and tag.
type Sealer struct{ aead cipher.AEAD }

// ParseKey reads ONCELEDGER_SECRETS_KEY: 32 bytes as 64 hex digits or as
// base64 (standard or URL alphabet, padded or not).
func ParseKey(s string) (*Sealer, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, ErrNoSecretsKey
	}
	key, err := hex.DecodeString(s)
	if err != nil || len(key) != 32 {
		key = nil
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
				key = b
				break
			}
		}
	}
	if key == nil {
		return nil, fmt.Errorf("%w: want 32 bytes as 64 hex digits or base64", ErrBadSecretsKey)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSecretsKey, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSecretsKey, err)
	}
	return &Sealer{aead: aead}, nil
}

// aad binds a sealed secret to its subscription: a sealed value copied to
// another row does not open there.
func aad(subscription string) []byte { return []byte("onceledger subscription secret " + subscription) }

// Seal encrypts secret for the subscription id.
func (s *Sealer) Seal(subscription, secret string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, []byte(secret), aad(subscription)), nil
}

// Open decrypts what Seal returned.
func (s *Sealer) Open(subscription string, sealed []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", fmt.Errorf("%w: sealed secret too short", ErrBadSecretsKey)
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], aad(subscription))
	if err != nil {
		return "", fmt.Errorf("%w: a subscription secret does not decrypt with it (was the key changed?)", ErrBadSecretsKey)
	}
	return string(plain), nil
}

// NewSecret returns a new signing secret: whsec_ and 32 random bytes in
// base64 (Standard Webhooks accepts 24 to 64 bytes).
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// Sign returns the webhook-signature header of a message per the Standard
// Webhooks spec (https://www.standardwebhooks.com/, "Signature scheme"):
// for each secret, "v1," and the base64 HMAC-SHA256, keyed with the
// secret's base64-decoded bytes, of "id.timestamp.body", where timestamp
// is the webhook-timestamp header (Unix seconds); several signatures are
// separated by spaces (a rotation: receivers accept any of them).
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
		if err != nil {
			return "", fmt.Errorf("signing secret is not whsec_<base64>: %w", err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}
