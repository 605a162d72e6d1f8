// Package registry owns the one list of providers: for each, its name, its
// webhook configuration (kong flags with ONCELEDGER_* twins, their checks
// and the adapter they build), its settlement report importer and the
// configuration of its API client. The commands embed the configurations
// (serve, redrive), build the configured adapters, validate
// `settle import --provider` and import reports from it; Variables lists
// every variable it knows. Adding a provider is one entry in list.
//
// It cannot live in package providers: it imports every provider package,
// and they import providers.
package registry

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/adyen"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi"
	"github.com/onceledger/onceledger/adapters/providers/circle"
	"github.com/onceledger/onceledger/adapters/providers/paypal"
	"github.com/onceledger/onceledger/adapters/providers/paypalipn"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/square"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
)

// list is every provider, in the order serve --help lists their flags.
var list = []Provider{
	{Name: stripe.Name, Config: func() Config { return &stripe.Config{} }, Report: stripe.ParseSettlement, API: stripeapi.Config{}},
	{Name: standard.Name, Config: func() Config { return &standard.Config{} }},
	{Name: adyen.Name, Config: func() Config { return &adyen.Config{} }, Report: adyen.ParseSettlement},
	{Name: paypal.Name, Config: func() Config { return &paypal.Config{} }, Report: paypal.ParseSettlement},
	{Name: square.Name, Config: func() Config { return &square.Config{} }, Report: square.ParseSettlement},
	{Name: circle.Name, Config: func() Config { return &circle.Config{} }},
	{Name: paypalipn.Name, Config: func() Config { return &paypalipn.Config{} }},
	{Name: alipay.Name, Config: func() Config { return &alipay.Config{} }, Report: alipay.ParseSettlement, API: alipayapi.Config{}},
	{Name: wechatpay.Name, Config: func() Config { return &wechatpay.Config{} }, Report: wechatpay.ParseSettlement, API: wechatpayapi.Config{}},
}

// Provider is one entry of the registry.
type Provider struct {
	// Name is the provider's name in URLs, stream ids and the inbox; the
	// adapter Config builds answers it.
	Name string
	// Config returns an empty webhook configuration, for kong to fill.
	Config func() Config
	// Report is the settlement report importer (`settle import`, POST
	// /v1/settlements/{provider}); nil when the provider has none. A
	// provider publishing several kinds of file tells them apart in it:
	// neither entry point names the kind.
	Report report.Parser
	// API is the configuration of the provider's API client (a struct of
	// kong flags: settle sync, backfill), listed by Variables; nil when it
	// has none. The commands using the client embed its type.
	API any
}

// Config is a provider's webhook configuration: a pointer to a struct
// whose fields are kong flags with ONCELEDGER_* twins (no group: the
// embedding command names it). A configuration may also have a
// `Check() error` method refusing half a configuration (a setting that is
// useless without another); it is checked whether or not Configured.
type Config interface {
	// Configured reports whether the provider is configured: an
	// unconfigured provider gets no adapter and its endpoint answers 404.
	Configured() bool
	// New builds the adapter from a configured configuration.
	New(providers.Settings) (providers.Adapter, error)
}

// checker is the optional half-configuration check of a Config.
type checker interface{ Check() error }

// Providers is the registry's list, in its order.
func Providers() []Provider { return slices.Clone(list) }

// Reports are the report importers by provider name.
func Reports() map[string]report.Parser {
	out := map[string]report.Parser{}
	for _, p := range list {
		if p.Report != nil {
			out[p.Name] = p.Report
		}
	}
	return out
}

// ReportNames are the providers with a report importer, in list order.
func ReportNames() []string {
	var out []string
	for _, p := range list {
		if p.Report != nil {
			out = append(out, p.Name)
		}
	}
	return out
}

// Set is one command's webhook configuration of every provider, which
// kong fills: each command that embeds it (serve, redrive) gets its own.
type Set struct {
	configs []Config // list's order
}

// NewSet returns every provider's empty configuration.
func NewSet() *Set {
	s := &Set{}
	for _, p := range list {
		s.configs = append(s.configs, p.Config())
	}
	return s
}

// Flags are the configurations for kong to embed (as kong.Plugins: each
// element a pointer to a struct of flags).
func (s *Set) Flags() []any {
	out := make([]any, len(s.configs))
	for i, c := range s.configs {
		out[i] = c
	}
	return out
}

// Config is the named provider's configuration, nil if there is none.
func (s *Set) Config(name string) Config {
	for i, p := range list {
		if p.Name == name {
			return s.configs[i]
		}
	}
	return nil
}

// Check runs every provider's half-configuration check, in list order.
func (s *Set) Check() error {
	var errs []error
	for _, c := range s.configs {
		if ch, ok := c.(checker); ok {
			if err := ch.Check(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Adapters builds the configured providers' adapters, by name; a provider
// that is not configured is absent, so its endpoint answers 404.
func (s *Set) Adapters(settings providers.Settings) (map[string]providers.Adapter, error) {
	out := map[string]providers.Adapter{}
	for i, c := range s.configs {
		if !c.Configured() {
			continue
		}
		a, err := c.New(settings)
		if err != nil {
			return nil, err
		}
		if a.Name() != list[i].Name {
			return nil, fmt.Errorf("registry: provider %q built an adapter named %q", list[i].Name, a.Name())
		}
		out[a.Name()] = a
	}
	return out, nil
}

// Variable is one configuration variable a provider reads.
type Variable struct {
	Provider string // the provider's name
	Env      string // ONCELEDGER_…
	Flag     string // the flag, without its dashes
	API      bool   // read by the API client's commands, not by serve
	Default  bool   // the flag has a default: setting it configures nothing by itself
}

// Variables are every configuration variable of every provider, webhook
// and API client, in list order: read from the configurations' kong tags,
// so the list cannot drift from what the commands parse.
func Variables() []Variable {
	var out []Variable
	for _, p := range list {
		for _, v := range tagged(reflect.TypeOf(p.Config())) {
			v.Provider = p.Name
			out = append(out, v)
		}
		if p.API != nil {
			for _, v := range tagged(reflect.TypeOf(p.API)) {
				v.Provider, v.API = p.Name, true
				out = append(out, v)
			}
		}
	}
	return out
}

// ProviderVariables are the named provider's webhook variables an
// operator sets to configure it (those without a default: the IPN verify
// URL configures nothing), nil for an unknown provider.
func ProviderVariables(name string) []string {
	var out []string
	for _, v := range Variables() {
		if v.Provider == name && !v.API && !v.Default {
			out = append(out, v.Env)
		}
	}
	return out
}

// Unconfigured says what configures the named provider, for the answer of
// its endpoint while it is not configured ("provider \"adyen\" is not
// configured on this server: set ONCELEDGER_ADYEN_HMAC_KEYS"); false for
// a name the registry does not have.
func Unconfigured(name string) (string, bool) {
	vars := ProviderVariables(name)
	if len(vars) == 0 {
		return "", false
	}
	return fmt.Sprintf("provider %q is not configured on this server: set %s", name, strings.Join(vars, " and ")), true
}

// AllProviderVariables lists every provider's configuring variables, for the
// warning of a server that has none configured.
func AllProviderVariables() []string {
	var out []string
	for _, p := range list {
		out = append(out, ProviderVariables(p.Name)...)
	}
	return out
}

// tagged are the flags of a struct type with an env tag, descending into
// embedded structs as kong does.
func tagged(t reflect.Type) []Variable {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []Variable
	for i := range t.NumField() {
		f := t.Field(i)
		if _, embed := f.Tag.Lookup("embed"); f.Anonymous || embed {
			out = append(out, tagged(f.Type)...)
			continue
		}
		env, ok := f.Tag.Lookup("env")
		if !ok || !f.IsExported() {
			continue
		}
		_, def := f.Tag.Lookup("default")
		for _, e := range strings.Split(env, ",") {
			out = append(out, Variable{Env: strings.TrimSpace(e), Flag: f.Tag.Get("name"), Default: def})
		}
	}
	return out
}
