package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"

	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// redriveCmd is `onceledger redrive`: the stored raw bodies of the selected
// inbox rows are normalized again by their provider's adapter (configured
// as for serve: the same environment) and what they now carry is recorded
// through the same gate as a webhook, with the actor on the inbox row.
type redriveCmd struct {
	Provider string `name:"provider" help:"Only deliveries of this provider."`
	Type     string `name:"type" help:"Only deliveries of this event type (as the inbox lists it)."`
	Status   string `name:"status" default:"ignored" enum:"ignored,received" help:"Deliveries in this inbox status: ignored (a type the code did not handle then) or received."`
	Actor    string `name:"actor" env:"ONCELEDGER_ACTOR" help:"Who re-drives (recorded on the inbox rows); default: the OS user."`
	JSON     bool   `name:"json" help:"Print the counts as JSON."`

	// The provider adapters re-normalize: configured as for serve.
	Serve serveCmd `embed:""`
}

func (c *redriveCmd) Run(g *globals) error {
	actor := c.Actor
	if actor == "" {
		if u, err := user.Current(); err == nil {
			actor = u.Username
		}
	}
	if actor == "" {
		return fmt.Errorf("no actor: set --actor or ONCELEDGER_ACTOR")
	}
	provs, err := c.Serve.buildProviders()
	if err != nil {
		return fmt.Errorf("provider configuration: %w", err)
	}
	if c.Provider != "" {
		if _, ok := provs[c.Provider]; !ok {
			return fmt.Errorf("provider %q is not configured (its secrets are needed to know its adapter)", c.Provider)
		}
	}
	cfg := c.Serve.config(g, provs)
	cfg.Projections = false
	a, err := app.NewCore(g.ctx, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	n, err := a.Redriver().Redrive(g.ctx, ingest.RedriveFilter{Provider: c.Provider, Type: c.Type, Status: c.Status}, "cli:"+actor)
	if err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(os.Stdout).Encode(n)
	}
	fmt.Println("redrive:", httpapi.RedriveMessage(n))
	if n.Failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d deliveries could not be re-driven (see the log)", n.Failed)}
	}
	return nil
}
