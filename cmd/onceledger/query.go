package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/projections/views"
)

// queryCmd is `onceledger query`: ask the providers' APIs now about
// expected (or pending) payments, and record what they say through the
// webhook gate, as serve does on its schedule.
type queryCmd struct {
	Provider string `name:"provider" help:"Only this provider (stripe, alipay, wechatpay)."`
	Payment  string `name:"payment" xor:"which" help:"Ask about this payment now: the expected payment's reference (Alipay and WeChat Pay out_trade_no, Stripe PaymentIntent id); needs --provider."`
	Overdue  bool   `name:"overdue" xor:"which" help:"Ask about every overdue expected payment now, whatever its schedule."`
	JSON     bool   `name:"json" help:"Print the outcomes as JSON."`

	// The providers are configured as for serve (their API credentials,
	// and the keys that verify their answers).
	Serve serveCmd `embed:""`
}

func (c *queryCmd) Run(g *globals) error {
	provs, err := c.Serve.buildProviders()
	if err != nil {
		return fmt.Errorf("provider configuration: %w", err)
	}
	cfg := c.Serve.config(g, provs)
	cfg.Projections = false
	if cfg.Askers, err = c.Serve.askers(); err != nil {
		return err
	}
	if c.Provider != "" {
		a, ok := cfg.Askers[c.Provider]
		if !ok {
			return fmt.Errorf("provider %q is not asked: its API credentials are not configured (only stripe, alipay and wechatpay are asked)", c.Provider)
		}
		cfg.Askers = map[string]expectations.Asker{c.Provider: a}
	}
	if len(cfg.Askers) == 0 {
		return errors.New("no provider to ask: configure the API credentials of stripe, alipay or wechatpay (docs/reference.md)")
	}
	if c.Payment != "" && c.Provider == "" {
		return errors.New("--payment needs --provider")
	}
	core, err := app.NewCore(g.ctx, cfg)
	if err != nil {
		return err
	}
	defer core.Close()
	q := core.Querier("cli-"+uuid.NewString(), nil)
	counts := map[string]int{}
	ask := func(provider, ref string) {
		o, err := q.Ask(g.ctx, provider, ref)
		counts[string(o)]++
		if err != nil {
			g.log.Warn("query", "provider", provider, "reference", ref, "outcome", o, "error", err)
		} else {
			g.log.Info("query", "provider", provider, "reference", ref, "outcome", o)
		}
	}
	switch {
	case c.Payment != "":
		ask(c.Provider, c.Payment)
	case c.Overdue:
		var due []views.ExpectedPayment
		err := core.ReadModel().ExpectedPayments(g.ctx, views.ExpectedPaymentFilter{Status: "overdue", Provider: c.Provider},
			func(e views.ExpectedPayment) error { due = append(due, e); return nil })
		if err != nil {
			return err
		}
		for _, e := range due {
			if _, ok := cfg.Askers[e.Provider]; ok {
				ask(e.Provider, e.Reference)
			}
		}
	default:
		for {
			n, err := q.Sweep(g.ctx)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			counts["asked"] += n
		}
	}
	if c.JSON {
		return json.NewEncoder(os.Stdout).Encode(counts)
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%s\t%d\n", k, counts[k])
	}
	return nil
}
