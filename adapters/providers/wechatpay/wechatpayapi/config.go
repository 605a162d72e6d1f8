package wechatpayapi

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
)

// The variables the client is built from, named in its errors.
const (
	EnvMchID              = "ONCELEDGER_WECHATPAY_MCHID"
	EnvMerchantPrivateKey = "ONCELEDGER_WECHATPAY_MERCHANT_PRIVATE_KEY"
	EnvMerchantSerial     = "ONCELEDGER_WECHATPAY_MERCHANT_SERIAL"
)

// Config is the API client's configuration (settle sync wechatpay): kong
// flags with their ONCELEDGER_* twins (docs/reference.md,
// "Configuration"). The provider registry lists them with WeChat Pay's.
// Answers are verified with the platform certificates or public keys of
// the webhook configuration (ONCELEDGER_WECHATPAY_KEYS), which the command
// reads.
type Config struct {
	MchID              string `name:"wechatpay-mchid" env:"ONCELEDGER_WECHATPAY_MCHID" help:"The merchant id (mchid) calling the API (default: the one entry of ONCELEDGER_WECHATPAY_MCHIDS)."`
	MerchantPrivateKey string `name:"wechatpay-merchant-private-key" env:"ONCELEDGER_WECHATPAY_MERCHANT_PRIVATE_KEY" help:"PEM file of the merchant API private key (apiclient_key.pem), which signs the requests."`
	MerchantSerial     string `name:"wechatpay-merchant-serial" env:"ONCELEDGER_WECHATPAY_MERCHANT_SERIAL" help:"Serial number of the merchant API certificate (serial_no of the requests)."`
	APIBase            string `name:"wechatpay-api-base" env:"ONCELEDGER_WECHATPAY_API_BASE" default:"https://api.mch.weixin.qq.com" help:"WeChat Pay API v3 base URL."`
}

// Client is the client the configuration names, verifying answers with the
// keys of ONCELEDGER_WECHATPAY_KEYS (keys, SERIAL=FILE entries); the
// merchant id defaults to the one entry of mchIDs
// (ONCELEDGER_WECHATPAY_MCHIDS).
func (c Config) Client(keys, mchIDs []string) (*Client, error) {
	mchID := strings.TrimSpace(c.MchID)
	if ids := providers.NonEmpty(mchIDs); mchID == "" && len(ids) == 1 {
		mchID = strings.TrimSpace(ids[0])
	}
	if mchID == "" {
		return nil, fmt.Errorf("%s is not set (nor %s with exactly one merchant id)", EnvMchID, wechatpay.EnvMchIDs)
	}
	if strings.TrimSpace(c.MerchantPrivateKey) == "" {
		return nil, errors.New(EnvMerchantPrivateKey + " is not set")
	}
	if strings.TrimSpace(c.MerchantSerial) == "" {
		return nil, errors.New(EnvMerchantSerial + " is not set")
	}
	key, err := os.ReadFile(c.MerchantPrivateKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvMerchantPrivateKey, err)
	}
	platform, err := wechatpay.ParseKeys(keys, os.ReadFile)
	if err != nil {
		return nil, err
	}
	return New(c.APIBase, mchID, c.MerchantSerial, key, platform, &http.Client{Timeout: 60 * time.Second})
}
