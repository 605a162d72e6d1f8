package paypal

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Config is the webhook configuration of PayPal REST: kong flags with their
// ONCELEDGER_* twins (docs/reference.md, "Configuration"), which the
// provider registry embeds into the commands that build adapters.
type Config struct {
	WebhookID string   `name:"paypal-webhook-id" env:"ONCELEDGER_PAYPAL_WEBHOOK_ID" help:"PayPal webhook id."`
	CertFiles []string `name:"paypal-cert-files" env:"ONCELEDGER_PAYPAL_CERT_FILES" sep:"," help:"PEM files of trusted PayPal signing certificates."`
}

// Configured reports whether certificate files are set: without them, the
// provider's endpoint answers 404.
func (c *Config) Configured() bool { return len(providers.NonEmpty(c.CertFiles)) > 0 }

// Check refuses half a configuration, which would otherwise start with the
// provider silently answering 404.
func (c *Config) Check() error {
	var errs []error
	id := strings.TrimSpace(c.WebhookID) != ""
	if c.Configured() && !id {
		errs = append(errs, errors.New("ONCELEDGER_PAYPAL_CERT_FILES needs ONCELEDGER_PAYPAL_WEBHOOK_ID"))
	}
	if id && !c.Configured() {
		errs = append(errs, errors.New("ONCELEDGER_PAYPAL_WEBHOOK_ID needs ONCELEDGER_PAYPAL_CERT_FILES (the trusted signing certificates)"))
	}
	return errors.Join(errs...)
}

// New reads the certificate files and builds the adapter.
func (c *Config) New(s providers.Settings) (providers.Adapter, error) {
	var pems [][]byte
	for _, f := range providers.NonEmpty(c.CertFiles) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("ONCELEDGER_PAYPAL_CERT_FILES: %w", err)
		}
		pems = append(pems, b)
	}
	return New(c.WebhookID, pems, s.Tolerance)
}
