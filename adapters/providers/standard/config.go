package standard

import (
	"errors"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Config is the webhook configuration of Standard Webhooks: kong flags with
// their ONCELEDGER_* twins (docs/reference.md, "Configuration"), which the
// provider registry embeds into the commands that build adapters.
type Config struct {
	Secrets []string `name:"standard-secrets" env:"ONCELEDGER_STANDARD_SECRETS" sep:"," help:"Standard Webhooks whsec_<base64> secrets."`
}

// Configured reports whether a secret is set: without one, the provider's
// endpoint answers 404.
func (c *Config) Configured() bool { return len(providers.NonEmpty(c.Secrets)) > 0 }

// New builds the adapter.
func (c *Config) New(s providers.Settings) (providers.Adapter, error) {
	return New(providers.NonEmpty(c.Secrets), s.Tolerance)
}

// Check refuses a secret not in the Standard Webhooks form whsec_<base64>
// of a non-empty key: one that does not decode verifies nothing, and every
// delivery would answer 401.
func (c *Config) Check() error {
	return providers.CheckEntries("ONCELEDGER_STANDARD_SECRETS", c.Secrets, func(s string) error {
		if !strings.HasPrefix(s, secretPrefix) {
			return errors.New("not a Standard Webhooks secret (whsec_<base64>)")
		}
		key, err := decodeSecret(s)
		if err != nil || len(key) == 0 {
			return errors.New("whsec_ is not followed by the base64 of a key")
		}
		return nil
	})
}
