package circle

import (
	"errors"
	"fmt"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Config is the webhook configuration of Circle: kong flags with their
// ONCELEDGER_* twins (docs/reference.md, "Configuration"), which the
// provider registry embeds into the commands that build adapters.
type Config struct {
	PublicKeys []string `name:"circle-public-keys" env:"ONCELEDGER_CIRCLE_PUBLIC_KEYS" sep:"," help:"Circle KEY_ID=base64 SPKI ECDSA public keys."`
}

// Configured reports whether a public key is set: without one, the
// provider's endpoint answers 404.
func (c *Config) Configured() bool { return len(providers.NonEmpty(c.PublicKeys)) > 0 }

// Check refuses an entry that is not KEY_ID=base64 of an ECDSA P-256
// SubjectPublicKeyInfo: it would verify nothing, and every notification
// would answer 401.
func (c *Config) Check() error {
	return providers.CheckEntries("ONCELEDGER_CIRCLE_PUBLIC_KEYS", c.PublicKeys, func(kv string) error {
		id, key, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(id) == "" {
			return errors.New("not KEY_ID=base64")
		}
		if _, err := parseKey(key); err != nil {
			return fmt.Errorf("key %s: %w", strings.TrimSpace(id), err)
		}
		return nil
	})
}

// New reads the KEY_ID=base64 entries and builds the adapter.
func (c *Config) New(providers.Settings) (providers.Adapter, error) {
	keys := map[string]string{}
	for _, kv := range providers.NonEmpty(c.PublicKeys) {
		id, key, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("ONCELEDGER_CIRCLE_PUBLIC_KEYS: %q is not KEY_ID=base64", kv)
		}
		keys[strings.TrimSpace(id)] = key
	}
	return New(keys)
}
