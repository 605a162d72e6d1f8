package square

import (
	"errors"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Config is the webhook configuration of Square: kong flags with their
// ONCELEDGER_* twins (docs/reference.md, "Configuration"), which the
// provider registry embeds into the commands that build adapters.
type Config struct {
	SignatureKeys   []string `name:"square-signature-keys" env:"ONCELEDGER_SQUARE_SIGNATURE_KEYS" sep:"," help:"Square signature keys."`
	NotificationURL string   `name:"square-notification-url" env:"ONCELEDGER_SQUARE_NOTIFICATION_URL" help:"The exact notification URL subscribed at Square."`
}

// Configured reports whether a signature key is set: without one, the
// provider's endpoint answers 404.
func (c *Config) Configured() bool { return len(providers.NonEmpty(c.SignatureKeys)) > 0 }

// Check refuses half a configuration: Square signs the URL with the body.
func (c *Config) Check() error {
	var errs []error
	if c.Configured() && c.NotificationURL == "" {
		errs = append(errs, errors.New("ONCELEDGER_SQUARE_SIGNATURE_KEYS needs ONCELEDGER_SQUARE_NOTIFICATION_URL (Square signs the URL)"))
	}
	if strings.TrimSpace(c.NotificationURL) != "" && !c.Configured() {
		errs = append(errs, errors.New("ONCELEDGER_SQUARE_NOTIFICATION_URL needs ONCELEDGER_SQUARE_SIGNATURE_KEYS"))
	}
	return errors.Join(errs...)
}

// New builds the adapter (Square signs no timestamp: no tolerance).
func (c *Config) New(providers.Settings) (providers.Adapter, error) {
	return New(providers.NonEmpty(c.SignatureKeys), c.NotificationURL)
}
