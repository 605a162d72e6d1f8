package alipayapi

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
)

// The variables the client is built from, named in its errors.
const (
	EnvAppID         = "ONCELEDGER_ALIPAY_APP_ID"
	EnvAppPrivateKey = "ONCELEDGER_ALIPAY_APP_PRIVATE_KEY"
)

// Config is the API client's configuration (settle sync alipay): kong
// flags with their ONCELEDGER_* twins (docs/reference.md,
// "Configuration"). The provider registry lists them with Alipay's. The
// answers are verified with Alipay's public keys of the webhook
// configuration (ONCELEDGER_ALIPAY_PUBLIC_KEYS), which the command reads.
type Config struct {
	AppID         string `name:"alipay-app-id" env:"ONCELEDGER_ALIPAY_APP_ID" help:"The app_id calling the OpenAPI (default: the one entry of ONCELEDGER_ALIPAY_APP_IDS)."`
	AppPrivateKey string `name:"alipay-app-private-key" env:"ONCELEDGER_ALIPAY_APP_PRIVATE_KEY" help:"PEM file of the app's private key (RSA2), which signs the requests."`
	Gateway       string `name:"alipay-gateway" env:"ONCELEDGER_ALIPAY_GATEWAY" default:"https://openapi.alipay.com/gateway.do" help:"Alipay OpenAPI gateway URL."`
}

// Client is the client the configuration names, verifying answers with the
// PEM files publicKeys (ONCELEDGER_ALIPAY_PUBLIC_KEYS); the app id defaults
// to the one entry of appIDs (ONCELEDGER_ALIPAY_APP_IDS).
func (c Config) Client(publicKeys, appIDs []string) (*Client, error) {
	appID := strings.TrimSpace(c.AppID)
	if ids := providers.NonEmpty(appIDs); appID == "" && len(ids) == 1 {
		appID = strings.TrimSpace(ids[0])
	}
	if appID == "" {
		return nil, fmt.Errorf("%s is not set (nor %s with exactly one app_id)", EnvAppID, alipay.EnvAppIDs)
	}
	if strings.TrimSpace(c.AppPrivateKey) == "" {
		return nil, errors.New(EnvAppPrivateKey + " is not set")
	}
	key, err := os.ReadFile(c.AppPrivateKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvAppPrivateKey, err)
	}
	pems, err := alipay.ReadKeyFiles(providers.NonEmpty(publicKeys))
	if err != nil {
		return nil, err
	}
	return New(c.Gateway, appID, key, pems, &http.Client{Timeout: 60 * time.Second})
}
