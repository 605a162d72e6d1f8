package adyen

import (
	"errors"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Config is the webhook configuration of Adyen: kong flags with their
// ONCELEDGER_* twins (docs/reference.md, "Configuration"), which the
// provider registry embeds into the commands that build adapters.
type Config struct {
	HMACKeys []string `name:"adyen-hmac-keys" env:"ONCELEDGER_ADYEN_HMAC_KEYS" sep:"," help:"Adyen hex HMAC keys."`
}

// Configured reports whether a key is set: without one, the provider's
// endpoint answers 404.
func (c *Config) Configured() bool { return len(providers.NonEmpty(c.HMACKeys)) > 0 }

// New builds the adapter (Adyen signs no timestamp: no tolerance).
func (c *Config) New(providers.Settings) (providers.Adapter, error) {
	return New(providers.NonEmpty(c.HMACKeys))
}

// Check refuses an HMAC key that is not hex (Adyen shows the key as hex):
// it would verify nothing, and every notification would be refused.
func (c *Config) Check() error {
	return providers.CheckEntries("ONCELEDGER_ADYEN_HMAC_KEYS", c.HMACKeys, func(k string) error {
		if _, err := decodeKey(k); err != nil {
			return errors.New("not a hex HMAC key")
		}
		return nil
	})
}
