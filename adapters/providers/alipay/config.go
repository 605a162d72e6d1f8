package alipay

import (
	"fmt"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Config is the webhook configuration of Alipay: kong flags with their
// ONCELEDGER_* twins (docs/reference.md, "Configuration"), which the
// provider registry embeds into the commands that build adapters.
type Config struct {
	PublicKeys []string `name:"alipay-public-keys" env:"ONCELEDGER_ALIPAY_PUBLIC_KEYS" sep:"," help:"PEM files of Alipay's public keys or public-key certificates (several: rotation)."`
	AppIDs     []string `name:"alipay-app-ids" env:"ONCELEDGER_ALIPAY_APP_IDS" sep:"," help:"Alipay app_ids whose notifications are accepted."`
}

// Configured reports whether both keys and app ids are set: without them,
// the provider's endpoint answers 404.
func (c *Config) Configured() bool {
	return len(providers.NonEmpty(c.PublicKeys)) > 0 && len(providers.NonEmpty(c.AppIDs)) > 0
}

// Check refuses half a configuration, naming the variable missing, which
// would otherwise start with the provider silently answering 404.
func (c *Config) Check() error {
	keys, ids := len(providers.NonEmpty(c.PublicKeys)) > 0, len(providers.NonEmpty(c.AppIDs)) > 0
	switch {
	case keys && !ids:
		return fmt.Errorf("%w: %s needs %s (the app_ids whose notifications are accepted)", ErrConfig, EnvPublicKeys, EnvAppIDs)
	case ids && !keys:
		return fmt.Errorf("%w: %s needs %s (Alipay's public keys)", ErrConfig, EnvAppIDs, EnvPublicKeys)
	}
	return nil
}

// New reads the key files and builds the adapter; errors name the variable.
func (c *Config) New(providers.Settings) (providers.Adapter, error) {
	pems, err := ReadKeyFiles(providers.NonEmpty(c.PublicKeys))
	if err != nil {
		return nil, err
	}
	a, err := New(pems, providers.NonEmpty(c.AppIDs))
	if err != nil {
		return nil, err
	}
	return a, nil
}
