package main

import (
	"fmt"
	"strings"

	"github.com/onceledger/onceledger/adapters/askers"
	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
)

// askFlags are the API credentials serve (and `onceledger query`) asks the
// providers with about expected or pending payments: the same variables
// settle sync and backfill read. A provider whose credentials are not set
// is not asked.
type askFlags struct {
	StripeAsk    stripeapi.Config    `embed:"" group:"Asking the providers (ONCELEDGER_QUERY_AFTER)"`
	AlipayAsk    alipayapi.Config    `embed:"" group:"Asking the providers (ONCELEDGER_QUERY_AFTER)"`
	WechatpayAsk wechatpayapi.Config `embed:"" group:"Asking the providers (ONCELEDGER_QUERY_AFTER)"`
}

// askers builds the askers of the providers whose API credentials are set;
// the answers are verified with the webhook configuration's keys.
func (c *serveCmd) askers() (map[string]expectations.Asker, error) {
	out := map[string]expectations.Asker{}
	if strings.TrimSpace(c.StripeAsk.APIKey) != "" {
		client, err := c.StripeAsk.Client()
		if err != nil {
			return nil, fmt.Errorf("asking Stripe: %w", err)
		}
		out[stripe.Name] = askers.Stripe{Client: client}
	}
	if strings.TrimSpace(c.AlipayAsk.AppPrivateKey) != "" {
		cfg, _ := c.set().Config(alipay.Name).(*alipay.Config)
		if cfg == nil {
			return nil, fmt.Errorf("asking Alipay: %s needs the Alipay webhook configuration (%s, %s)", alipayapi.EnvAppPrivateKey, alipay.EnvPublicKeys, alipay.EnvAppIDs)
		}
		client, err := c.AlipayAsk.Client(cfg.PublicKeys, cfg.AppIDs)
		if err != nil {
			return nil, fmt.Errorf("asking Alipay: %w", err)
		}
		appID := strings.TrimSpace(c.AlipayAsk.AppID)
		if appID == "" && len(cfg.AppIDs) == 1 {
			appID = strings.TrimSpace(cfg.AppIDs[0])
		}
		out[alipay.Name] = askers.Alipay{Client: client, AppID: appID}
	}
	if strings.TrimSpace(c.WechatpayAsk.MerchantPrivateKey) != "" {
		cfg, _ := c.set().Config(wechatpay.Name).(*wechatpay.Config)
		if cfg == nil {
			return nil, fmt.Errorf("asking WeChat Pay: %s needs the WeChat Pay webhook configuration (%s, %s, %s)",
				wechatpayapi.EnvMerchantPrivateKey, wechatpay.EnvKeys, wechatpay.EnvAPIv3Keys, wechatpay.EnvMchIDs)
		}
		client, err := c.WechatpayAsk.Client(cfg.Keys, cfg.MchIDs)
		if err != nil {
			return nil, fmt.Errorf("asking WeChat Pay: %w", err)
		}
		// The adapter reads the answers as notifications (its APIv3 key).
		a, err := cfg.New(providers.Settings{Tolerance: c.WebhookTolerance})
		if err != nil {
			return nil, fmt.Errorf("asking WeChat Pay: %w", err)
		}
		wa, ok := a.(*wechatpay.Adapter)
		if !ok {
			return nil, fmt.Errorf("asking WeChat Pay: the adapter is a %T", a)
		}
		out[wechatpay.Name] = askers.WechatPay{Client: client, Adapter: wa}
	}
	return out, nil
}
