package paypalipn

import "github.com/onceledger/onceledger/adapters/providers"

// Config is the configuration of PayPal IPN: kong flags with their
// ONCELEDGER_* twins (docs/reference.md, "Configuration"), which the
// provider registry embeds into the commands that build adapters.
type Config struct {
	VerifyURL      string   `name:"paypal-ipn-verify-url" env:"ONCELEDGER_PAYPAL_IPN_VERIFY_URL" default:"https://ipnpb.paypal.com/cgi-bin/webscr" help:"Where IPN messages are posted back for verification."`
	ReceiverEmails []string `name:"paypal-ipn-receiver-emails" env:"ONCELEDGER_PAYPAL_IPN_RECEIVER_EMAILS" sep:"," help:"Receiver emails the IPN listener accepts; none = paypal-ipn not configured."`
}

// Configured reports whether a receiver email is set: without one, the
// provider's endpoint answers 404.
func (c *Config) Configured() bool { return len(providers.NonEmpty(c.ReceiverEmails)) > 0 }

// New builds the adapter; the postback verifier (Verifier, on VerifyURL)
// is the app's, since it runs in the background workers.
func (c *Config) New(providers.Settings) (providers.Adapter, error) {
	return New(providers.NonEmpty(c.ReceiverEmails))
}
