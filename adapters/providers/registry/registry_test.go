package registry_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/adyen"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/circle"
	"github.com/onceledger/onceledger/adapters/providers/paypal"
	"github.com/onceledger/onceledger/adapters/providers/paypalipn"
	"github.com/onceledger/onceledger/adapters/providers/registry"
	"github.com/onceledger/onceledger/adapters/providers/square"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
)

// The variable names are the public configuration (docs/reference.md):
// a renamed field must not rename them.
func TestVariablesAreTheDocumentedOnes(t *testing.T) {
	var env []string
	for _, v := range registry.Variables() {
		env = append(env, v.Env)
		assert.NotEmpty(t, v.Flag, "%s has no flag", v.Env)
	}
	assert.Equal(t, []string{
		"ONCELEDGER_STRIPE_SECRETS", "ONCELEDGER_STRIPE_API_KEY", "ONCELEDGER_STRIPE_API_BASE",
		"ONCELEDGER_STANDARD_SECRETS",
		"ONCELEDGER_ADYEN_HMAC_KEYS",
		"ONCELEDGER_PAYPAL_WEBHOOK_ID", "ONCELEDGER_PAYPAL_CERT_FILES",
		"ONCELEDGER_SQUARE_SIGNATURE_KEYS", "ONCELEDGER_SQUARE_NOTIFICATION_URL",
		"ONCELEDGER_CIRCLE_PUBLIC_KEYS",
		"ONCELEDGER_PAYPAL_IPN_VERIFY_URL", "ONCELEDGER_PAYPAL_IPN_RECEIVER_EMAILS",
		"ONCELEDGER_ALIPAY_PUBLIC_KEYS", "ONCELEDGER_ALIPAY_APP_IDS",
		"ONCELEDGER_ALIPAY_APP_ID", "ONCELEDGER_ALIPAY_APP_PRIVATE_KEY", "ONCELEDGER_ALIPAY_GATEWAY",
		"ONCELEDGER_WECHATPAY_KEYS", "ONCELEDGER_WECHATPAY_APIV3_KEYS", "ONCELEDGER_WECHATPAY_MCHIDS",
		"ONCELEDGER_WECHATPAY_MCHID", "ONCELEDGER_WECHATPAY_MERCHANT_PRIVATE_KEY", "ONCELEDGER_WECHATPAY_MERCHANT_SERIAL",
		"ONCELEDGER_WECHATPAY_API_BASE",
	}, env)
	assert.Equal(t, []string{"ONCELEDGER_ALIPAY_PUBLIC_KEYS", "ONCELEDGER_ALIPAY_APP_IDS"}, registry.ProviderVariables("alipay"),
		"the API client's variables (settle sync alipay) configure no webhook")
	assert.Equal(t, []string{"ONCELEDGER_SQUARE_SIGNATURE_KEYS", "ONCELEDGER_SQUARE_NOTIFICATION_URL"},
		registry.ProviderVariables(square.Name))
	assert.Equal(t, []string{"ONCELEDGER_STRIPE_SECRETS"}, registry.ProviderVariables(stripe.Name), "the API key configures no webhook")
	assert.Nil(t, registry.ProviderVariables("nobody"))
	assert.Equal(t, []string{"ONCELEDGER_PAYPAL_IPN_RECEIVER_EMAILS"}, registry.ProviderVariables(paypalipn.Name),
		"the verify URL has a default: it configures nothing")
}

// The 404 of an unconfigured provider names what configures it.
func TestUnconfiguredNamesTheVariables(t *testing.T) {
	msg, ok := registry.Unconfigured(square.Name)
	require.True(t, ok)
	assert.Equal(t, `provider "square" is not configured on this server: set ONCELEDGER_SQUARE_SIGNATURE_KEYS and ONCELEDGER_SQUARE_NOTIFICATION_URL`, msg)
	_, ok = registry.Unconfigured("nobody")
	assert.False(t, ok)
	all := registry.AllProviderVariables()
	assert.Contains(t, all, "ONCELEDGER_STANDARD_SECRETS")
	assert.Contains(t, all, "ONCELEDGER_PAYPAL_IPN_RECEIVER_EMAILS")
	assert.NotContains(t, all, "ONCELEDGER_PAYPAL_IPN_VERIFY_URL")
	assert.NotContains(t, all, "ONCELEDGER_STRIPE_API_KEY")
}

func TestReportImporters(t *testing.T) {
	assert.Equal(t, []string{"stripe", "adyen", "paypal", "square", "alipay", "wechatpay"}, registry.ReportNames())
	reports := registry.Reports()
	assert.Len(t, reports, 6)
	for _, n := range registry.ReportNames() {
		assert.NotNil(t, reports[n], n)
	}
}

func TestNamesAreUniqueAndEveryConfigIsFresh(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range registry.Providers() {
		assert.False(t, seen[p.Name], "%s listed twice", p.Name)
		seen[p.Name] = true
		require.NotNil(t, p.Config, p.Name)
		assert.NotSame(t, p.Config(), p.Config(), "%s: two commands would share one configuration", p.Name)
		assert.False(t, p.Config().Configured(), "%s: an empty configuration configures nothing", p.Name)
	}
	a, b := registry.NewSet(), registry.NewSet()
	assert.Len(t, a.Flags(), len(registry.Providers()))
	a.Config(stripe.Name).(*stripe.Config).Secrets = []string{"whsec_a"}
	assert.False(t, b.Config(stripe.Name).Configured(), "sets share a configuration")
	assert.Nil(t, a.Config("nobody"))
}

// Each configured provider gets its adapter, under its name; the others
// none (their endpoints answer 404).
func TestAdaptersOfTheConfiguredProviders(t *testing.T) {
	s := registry.NewSet()
	settings := providers.Settings{Tolerance: 5 * time.Minute}
	none, err := s.Adapters(settings)
	require.NoError(t, err)
	assert.Empty(t, none)

	cert := filepath.Join(t.TempDir(), "paypal.pem")
	require.NoError(t, os.WriteFile(cert, selfSigned(t), 0o600))
	s.Config(stripe.Name).(*stripe.Config).Secrets = []string{" ", "whsec_test"}
	s.Config(standard.Name).(*standard.Config).Secrets = []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	s.Config(paypal.Name).(*paypal.Config).WebhookID, s.Config(paypal.Name).(*paypal.Config).CertFiles = "WH-1", []string{cert}
	s.Config(square.Name).(*square.Config).SignatureKeys = []string{"k"}
	s.Config(square.Name).(*square.Config).NotificationURL = "https://example.com/webhooks/square"
	s.Config(paypalipn.Name).(*paypalipn.Config).ReceiverEmails = []string{"shop@example.com"}
	s.Config(alipay.Name).(*alipay.Config).PublicKeys = []string{cert}
	s.Config(alipay.Name).(*alipay.Config).AppIDs = []string{"2021000000000001"}
	wx := s.Config(wechatpay.Name).(*wechatpay.Config)
	wx.Keys, wx.APIv3Keys, wx.MchIDs = []string{"PUB_KEY_ID_0114232134912410000000000000=" + publicKeyFile(t)},
		[]string{"0123456789abcdef0123456789abcdef"}, []string{"1230000109"}
	require.NoError(t, s.Check())
	got, err := s.Adapters(settings)
	require.NoError(t, err)
	var names []string
	for n, a := range got {
		assert.Equal(t, n, a.Name())
		names = append(names, n)
	}
	assert.ElementsMatch(t, []string{"stripe", "standard", "paypal", "square", "paypal-ipn", "alipay", "wechatpay"}, names)
}

// publicKeyFile is a PEM RSA public key file, as WeChat Pay's public keys are.
func publicKeyFile(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), "wechatpay.pem")
	require.NoError(t, os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
	return f
}

// selfSigned is a PEM RSA certificate, as PayPal's signing certificates are.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "messageverificationcerts.paypal.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Half a configuration is refused, naming both variables, whether or not
// the provider is configured.
func TestHalfAConfigurationIsRefused(t *testing.T) {
	s := registry.NewSet()
	s.Config(paypal.Name).(*paypal.Config).WebhookID = "WH-1"
	s.Config(square.Name).(*square.Config).SignatureKeys = []string{"k"}
	err := s.Check()
	require.Error(t, err)
	assert.ErrorContains(t, err, "ONCELEDGER_PAYPAL_WEBHOOK_ID needs ONCELEDGER_PAYPAL_CERT_FILES")
	assert.ErrorContains(t, err, "ONCELEDGER_SQUARE_SIGNATURE_KEYS needs ONCELEDGER_SQUARE_NOTIFICATION_URL (Square signs the URL)")

	s = registry.NewSet()
	s.Config(paypal.Name).(*paypal.Config).CertFiles = []string{"/nonexistent.pem"}
	s.Config(square.Name).(*square.Config).NotificationURL = "https://example.com/"
	err = s.Check()
	assert.ErrorContains(t, err, "ONCELEDGER_PAYPAL_CERT_FILES needs ONCELEDGER_PAYPAL_WEBHOOK_ID")
	assert.ErrorContains(t, err, "ONCELEDGER_SQUARE_NOTIFICATION_URL needs ONCELEDGER_SQUARE_SIGNATURE_KEYS")

	s = registry.NewSet()
	s.Config(alipay.Name).(*alipay.Config).AppIDs = []string{"2021000000000001"}
	s.Config(wechatpay.Name).(*wechatpay.Config).MchIDs = []string{"1230000109"}
	err = s.Check()
	assert.ErrorContains(t, err, "ONCELEDGER_ALIPAY_APP_IDS needs ONCELEDGER_ALIPAY_PUBLIC_KEYS")
	assert.ErrorContains(t, err, "ONCELEDGER_WECHATPAY_MCHIDS needs ONCELEDGER_WECHATPAY_KEYS and ONCELEDGER_WECHATPAY_APIV3_KEYS")

	s = registry.NewSet()
	s.Config(circle.Name).(*circle.Config).PublicKeys = []string{"no-equals-sign"}
	_, err = s.Adapters(providers.Settings{Tolerance: time.Minute})
	assert.ErrorContains(t, err, `ONCELEDGER_CIRCLE_PUBLIC_KEYS: "no-equals-sign" is not KEY_ID=base64`)
}

// A malformed secret is refused at start, naming the variable and the
// entry, never echoing it; well-formed ones pass.
func TestMalformedSecretsAreRefused(t *testing.T) {
	s := registry.NewSet()
	s.Config(stripe.Name).(*stripe.Config).Secrets = []string{"whsec_ok", "sk_live_pasted"}
	s.Config(standard.Name).(*standard.Config).Secrets = []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	s.Config(adyen.Name).(*adyen.Config).HMACKeys = []string{"not-hex"}
	s.Config(circle.Name).(*circle.Config).PublicKeys = []string{"key1=bm90IGEga2V5"}
	err := s.Check()
	require.Error(t, err)
	assert.ErrorContains(t, err, "ONCELEDGER_STRIPE_SECRETS: entry 2: not a Stripe webhook signing secret (whsec_…)")
	assert.ErrorContains(t, err, "ONCELEDGER_STANDARD_SECRETS: entry 1: not a Standard Webhooks secret (whsec_<base64>)")
	assert.ErrorContains(t, err, "ONCELEDGER_ADYEN_HMAC_KEYS: entry 1: not a hex HMAC key")
	assert.ErrorContains(t, err, "ONCELEDGER_CIRCLE_PUBLIC_KEYS: entry 1: key key1:")
	for _, secret := range []string{"sk_live_pasted", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "not-hex", "bm90IGEga2V5"} {
		assert.NotContains(t, err.Error(), secret)
	}

	s = registry.NewSet()
	s.Config(standard.Name).(*standard.Config).Secrets = []string{"whsec_%%%"}
	s.Config(circle.Name).(*circle.Config).PublicKeys = []string{"no-equals-sign"}
	err = s.Check()
	assert.ErrorContains(t, err, "ONCELEDGER_STANDARD_SECRETS: entry 1: whsec_ is not followed by the base64 of a key")
	assert.ErrorContains(t, err, "ONCELEDGER_CIRCLE_PUBLIC_KEYS: entry 1: not KEY_ID=base64")

	s = registry.NewSet()
	s.Config(stripe.Name).(*stripe.Config).Secrets = []string{" ", "whsec_test"}
	s.Config(standard.Name).(*standard.Config).Secrets = []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	s.Config(adyen.Name).(*adyen.Config).HMACKeys = []string{"44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"}
	s.Config(circle.Name).(*circle.Config).PublicKeys = []string{"key1=" + circleKey(t)}
	assert.NoError(t, s.Check())
}

// circleKey is the base64 SPKI of a fresh ECDSA P-256 key.
func circleKey(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(der)
}
