package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/registry"
)

// parseCLI parses args as `onceledger` does (newCLI), without running.
func parseCLI(t *testing.T, args ...string) (*cli, error) {
	t.Helper()
	c := newCLI()
	k, err := kong.New(c, kong.Name("onceledger"), kong.Exit(func(int) { t.Fatal("kong exited") }))
	require.NoError(t, err)
	_, err = k.Parse(args)
	return c, err
}

// clearProviderEnv unsets every provider variable for the test (restored
// after it): a shell that configured a provider (the README's first run
// exports ONCELEDGER_STANDARD_SECRETS) must not change what a test parses.
func clearProviderEnv(t *testing.T) {
	t.Helper()
	for _, v := range registry.Variables() {
		t.Setenv(v.Env, "") // registers the restore
		require.NoError(t, os.Unsetenv(v.Env))
	}
}

// The provider flags come from the registry, with their environment
// twins: serve and redrive each get their own.
func TestServeConfigProvidersFromTheEnvironment(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("ONCELEDGER_STRIPE_SECRETS", "whsec_a, ,whsec_b")
	t.Setenv("ONCELEDGER_PAYPAL_IPN_RECEIVER_EMAILS", "shop@example.com")
	for _, cmd := range []string{"serve", "redrive"} {
		c, err := parseCLI(t, cmd)
		require.NoError(t, err, cmd)
		s := &c.Serve
		if cmd == "redrive" {
			s = &c.Redrive.Serve
		}
		provs, err := s.buildProviders()
		require.NoError(t, err, cmd)
		var names []string
		for n := range provs {
			names = append(names, n)
		}
		sort.Strings(names)
		assert.Equal(t, []string{"paypal-ipn", "stripe"}, names, cmd)
		assert.Equal(t, "https://ipnpb.paypal.com/cgi-bin/webscr", s.ipnVerifyURL(), "%s: the IPN verify URL's default", cmd)
	}
	c, err := parseCLI(t, "serve", "--paypal-ipn-verify-url", "http://127.0.0.1:1/ipn")
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:1/ipn", c.Serve.config(&globals{cli: c}, nil).PostbackURL)
}

// Half a provider configuration is refused before anything opens, with
// serve's own checks.
func TestServeConfigRefusesHalfAProvider(t *testing.T) {
	t.Setenv("ONCELEDGER_SQUARE_NOTIFICATION_URL", "https://example.com/square")
	_, err := parseCLI(t, "serve", "--webhook-tolerance", "0s")
	require.Error(t, err)
	assert.ErrorContains(t, err, "ONCELEDGER_WEBHOOK_TOLERANCE must be positive")
	assert.ErrorContains(t, err, "ONCELEDGER_SQUARE_NOTIFICATION_URL needs ONCELEDGER_SQUARE_SIGNATURE_KEYS")
}

// A malformed secret is a start-up error of serve (and of redrive, which
// builds the same adapters), before anything opens.
func TestServeConfigRefusesAMalformedSecret(t *testing.T) {
	t.Setenv("ONCELEDGER_STRIPE_SECRETS", "sk_live_pasted_by_mistake")
	for _, cmd := range []string{"serve", "redrive"} {
		_, err := parseCLI(t, cmd)
		require.Error(t, err, cmd)
		assert.ErrorContains(t, err, "ONCELEDGER_STRIPE_SECRETS: entry 1: not a Stripe webhook signing secret (whsec_…)", cmd)
		assert.NotContains(t, err.Error(), "sk_live_pasted_by_mistake", cmd)
	}
}

// serve with no provider configured warns, naming the variables that
// would configure one (the registry's); with one configured it says nothing.
func TestServeConfigWarnsWithoutProviders(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	warnNoProvider(log, nil)
	out := buf.String()
	assert.Contains(t, out, `level=WARN msg="no provider configured: every webhook answers 404"`)
	for _, v := range []string{"ONCELEDGER_STRIPE_SECRETS", "ONCELEDGER_STANDARD_SECRETS", "ONCELEDGER_ADYEN_HMAC_KEYS", "ONCELEDGER_PAYPAL_IPN_RECEIVER_EMAILS"} {
		assert.Contains(t, out, v)
	}
	buf.Reset()
	warnNoProvider(log, map[string]providers.Adapter{"standard": nil})
	assert.Empty(t, buf.String())
}

// `settle import --provider` takes the providers the registry gives a
// report importer, and refuses the others in kong's enum words.
func TestSettleImportProviderIsTheRegistrys(t *testing.T) {
	f := filepath.Join(t.TempDir(), "report.csv")
	require.NoError(t, os.WriteFile(f, nil, 0o600))
	c, err := parseCLI(t, "settle", "import", "--provider", "adyen", f)
	require.NoError(t, err)
	assert.Equal(t, "adyen", c.Settle.Import.Provider)
	_, err = parseCLI(t, "settle", "import", "--provider", "circle", f)
	assert.ErrorContains(t, err, `--provider must be one of "stripe","adyen","paypal","square","alipay","wechatpay" but got "circle"`)
}

// commandEnvs are the environment variables of the command at path (its
// flags and its parents').
func commandEnvs(t *testing.T, path ...string) map[string]bool {
	t.Helper()
	k, err := kong.New(newCLI(), kong.Name("onceledger"))
	require.NoError(t, err)
	node := k.Model.Node
	for _, name := range path {
		var next *kong.Node
		for _, ch := range node.Children {
			if ch.Name == name {
				next = ch
			}
		}
		require.NotNil(t, next, "no command %v", path)
		node = next
	}
	out := map[string]bool{}
	for _, group := range node.AllFlags(false) {
		for _, f := range group {
			for _, e := range f.Envs {
				out[e] = true
			}
		}
	}
	return out
}

// What the registry lists is what the commands read: its webhook
// variables are serve's (and redrive's), its API variables the sync and
// backfill commands' (settle sync PROVIDER; Stripe's backfill too); and
// every provider flag serve has is listed.
func TestConfigRegistryVariablesAreTheCommands(t *testing.T) {
	serve, redrive := commandEnvs(t, "serve"), commandEnvs(t, "redrive")
	backfill := commandEnvs(t, "backfill", "stripe")
	listed := map[string]bool{}
	for _, v := range registry.Variables() {
		listed[v.Env] = true
		if v.API {
			assert.True(t, commandEnvs(t, "settle", "sync", v.Provider)[v.Env], "%s is not read by settle sync %s", v.Env, v.Provider)
			assert.True(t, v.Provider != "stripe" || backfill[v.Env], "%s is not read by backfill stripe", v.Env)
			continue
		}
		assert.True(t, serve[v.Env], "serve does not read %s", v.Env)
		assert.True(t, redrive[v.Env], "redrive does not read %s", v.Env)
	}
	k, err := kong.New(newCLI(), kong.Name("onceledger"))
	require.NoError(t, err)
	for _, ch := range k.Model.Children {
		if ch.Name != "serve" {
			continue
		}
		for _, f := range ch.Flags {
			if f.Group != nil && f.Group.Title == "Providers (a provider without its secrets answers 404)" {
				for _, e := range f.Envs {
					assert.True(t, listed[e], "serve's provider flag %s is not in the registry", e)
				}
			}
		}
	}
}

// A malformed ONCELEDGER_SECRETS_KEY refuses to start, without echoing it;
// 32 bytes in hex or base64 are accepted.
func TestServeConfigRefusesAMalformedSecretsKey(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("ONCELEDGER_SECRETS_KEY", "tooshort-key-value")
	_, err := parseCLI(t, "serve")
	require.Error(t, err)
	assert.ErrorContains(t, err, "ONCELEDGER_SECRETS_KEY")
	assert.NotContains(t, err.Error(), "tooshort-key-value")
	for _, ok := range []string{strings.Repeat("ab", 32), "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="} {
		t.Setenv("ONCELEDGER_SECRETS_KEY", ok)
		_, err := parseCLI(t, "serve")
		require.NoError(t, err, ok)
	}
}

// ONCELEDGER_QUERY_RATE is each provider's rate limit: a rate that is not a
// positive number is refused at start-up, naming the variable.
func TestServeConfigQueryRate(t *testing.T) {
	c, err := parseCLI(t, "serve")
	require.NoError(t, err)
	assert.Equal(t, 5.0, c.Serve.QueryRate, "the default")
	c, err = parseCLI(t, "serve", "--query-rate", "200")
	require.NoError(t, err)
	assert.Equal(t, 200.0, c.Serve.config(&globals{cli: c}, nil).QueryRate)
	for _, bad := range []string{"0", "-1", "NaN", "+Inf"} {
		_, err := parseCLI(t, "serve", "--query-rate="+bad)
		require.Error(t, err, bad)
		assert.ErrorContains(t, err, "ONCELEDGER_QUERY_RATE must be a positive number", bad)
	}
}
