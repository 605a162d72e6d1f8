package stripeapi

import (
	"errors"
	"net/http"
	"strings"
	"time"
)

// Config is the API client's configuration (settle sync stripe, backfill
// stripe): kong flags with their ONCELEDGER_* twins (docs/reference.md,
// "Configuration"). The provider registry lists them with Stripe's.
type Config struct {
	APIKey  string `name:"stripe-api-key" env:"ONCELEDGER_STRIPE_API_KEY" help:"Stripe secret key (sk_…) of the account."`
	APIBase string `name:"stripe-api-base" env:"ONCELEDGER_STRIPE_API_BASE" default:"https://api.stripe.com" help:"Stripe API base URL."`
}

// Client is the client the configuration names.
func (c Config) Client() (*Client, error) {
	if strings.TrimSpace(c.APIKey) == "" {
		return nil, errors.New("ONCELEDGER_STRIPE_API_KEY is not set")
	}
	return New(c.APIBase, c.APIKey, &http.Client{Timeout: 60 * time.Second})
}
