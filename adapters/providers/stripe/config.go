package stripe

import (
	"errors"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Config is the webhook configuration of Stripe: kong flags with their
// ONCELEDGER_* twins (docs/reference.md, "Configuration"), which the
// provider registry embeds into the commands that build adapters.
type Config struct {
	Secrets []string `name:"stripe-secrets" env:"ONCELEDGER_STRIPE_SECRETS" sep:"," help:"Stripe whsec_ signing secrets (several: rotation)."`
}

// Configured reports whether a secret is set: without one, the provider's
// endpoint answers 404.
func (c *Config) Configured() bool { return len(providers.NonEmpty(c.Secrets)) > 0 }

// New builds the adapter.
func (c *Config) New(s providers.Settings) (providers.Adapter, error) {
	return New(providers.NonEmpty(c.Secrets), s.Tolerance)
}

// Check refuses a secret not in Stripe's signing-secret form (whsec_…): a
// key pasted from elsewhere (an API key, the dashboard's masked text)
// verifies nothing, and every delivery would answer 401.
func (c *Config) Check() error {
	return providers.CheckEntries("ONCELEDGER_STRIPE_SECRETS", c.Secrets, func(s string) error {
		if rest, ok := strings.CutPrefix(s, "whsec_"); !ok || rest == "" {
			return errors.New("not a Stripe webhook signing secret (whsec_…)")
		}
		return nil
	})
}
