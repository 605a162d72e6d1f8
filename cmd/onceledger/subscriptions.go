package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// outboxFlags are the push subscriptions' settings, shared by serve and
// `onceledger subscriptions`.
type outboxFlags struct {
	SecretsKey   string `name:"secrets-key" env:"ONCELEDGER_SECRETS_KEY" group:"Outbound events" help:"32-byte key (hex or base64) that encrypts subscription signing secrets at rest; required once a subscription exists."`
	AllowPrivate bool   `name:"outbox-allow-private" env:"ONCELEDGER_OUTBOX_ALLOW_PRIVATE" group:"Outbound events" help:"Allow subscription URLs on addresses that are not globally reachable (loopback, private, link-local, shared, reserved: the IANA special-purpose registries)."`
}

// subscriptionsCmd is `onceledger subscriptions`: the push subscriptions
// through the app core's service, as POST /v1/subscriptions… does over
// HTTP; each action is recorded with the actor (docs/events.md).
type subscriptionsCmd struct {
	Add    subscriptionsAddCmd    `cmd:"" help:"Create a push subscription; prints its id and signing secret (shown once)."`
	List   subscriptionsListCmd   `cmd:"" help:"List the push subscriptions with their state, cursor and last error."`
	Remove subscriptionsRemoveCmd `cmd:"" help:"Remove a push subscription."`
	Replay subscriptionsReplayCmd `cmd:"" help:"Send a subscription's events again (same ids) from a cursor or a time."`
}

type subscriptionsAddCmd struct {
	URL         string   `arg:"" help:"The endpoint (http:// or https://)."`
	Type        []string `name:"type" help:"Only these public event types (repeatable or comma-separated); none: every type but settlement.line."`
	Provider    []string `name:"provider" help:"Only events of these providers (repeatable or comma-separated)."`
	Description string   `name:"description" help:"What the endpoint is."`
	From        string   `name:"from" help:"Start after this cursor; default: events recorded from now on."`
	actorFlag
	outboxFlags
}

type subscriptionsListCmd struct {
	JSON bool `name:"json" help:"Print as JSON (the shape of GET /v1/subscriptions)."`
	outboxFlags
}

type subscriptionsRemoveCmd struct {
	ID   string `arg:"" help:"The subscription's id."`
	Note string `name:"note" help:"Why, recorded with the action."`
	actorFlag
	outboxFlags
}

type subscriptionsReplayCmd struct {
	ID   string `arg:"" help:"The subscription's id."`
	From string `name:"from" required:"" help:"A cursor (exclusive) or an RFC 3339 time."`
	Note string `name:"note" help:"Why, recorded with the action."`
	actorFlag
	outboxFlags
}

// withSubscriptions builds the core (no projections, no migrations) and
// runs fn with its subscriptions service.
func withSubscriptions(g *globals, f outboxFlags, fn func(context.Context, *outbox.Service) error) error {
	core, err := app.NewCore(g.ctx, app.Config{DatabaseURL: g.cli.DatabaseURL, EventStore: g.cli.EventStore, BankArrivalDays: g.cli.BankArrivalDays,
		SecretsKey: f.SecretsKey, OutboxAllowPrivate: f.AllowPrivate, Logger: g.log})
	if err != nil {
		return err
	}
	defer core.Close()
	if err := core.VerifySecretsKey(g.ctx); err != nil {
		return err
	}
	return fn(g.ctx, core.Subscriptions())
}

func splitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, one := range strings.Split(v, ",") {
			if one = strings.TrimSpace(one); one != "" {
				out = append(out, one)
			}
		}
	}
	return out
}

func (c *subscriptionsAddCmd) Run(g *globals) error {
	actor, err := c.actor()
	if err != nil {
		return err
	}
	return withSubscriptions(g, c.outboxFlags, func(ctx context.Context, svc *outbox.Service) error {
		cr, err := svc.Create(ctx, outbox.NewSubscription{URL: c.URL, Types: splitList(c.Type), Providers: splitList(c.Provider),
			Description: c.Description, From: c.From}, "cli:"+actor, "")
		if err != nil {
			return err
		}
		fmt.Printf("id %s\nsecret %s\n(the secret is shown this once)\n", cr.Subscription.ID, cr.Secret)
		return nil
	})
}

func (c *subscriptionsListCmd) Run(g *globals) error {
	return withSubscriptions(g, c.outboxFlags, func(ctx context.Context, svc *outbox.Service) error {
		subs, err := svc.List(ctx)
		if err != nil {
			return err
		}
		out := httpapi.SubscriptionsJSON{Subscriptions: make([]httpapi.SubscriptionJSON, len(subs))}
		for i, s := range subs {
			out.Subscriptions[i] = httpapi.NewSubscriptionJSON(s)
		}
		if c.JSON {
			return json.NewEncoder(os.Stdout).Encode(out)
		}
		for _, s := range out.Subscriptions {
			types := "all types"
			if len(s.Types) > 0 {
				types = strings.Join(s.Types, ",")
			}
			fmt.Printf("%s %s %s (%s) cursor %s pending %d", s.ID, s.State, s.URL, types, s.Cursor, s.Pending)
			if s.LastError != "" {
				fmt.Printf(" last error: %s", s.LastError)
			}
			fmt.Println()
		}
		return nil
	})
}

func (c *subscriptionsRemoveCmd) Run(g *globals) error {
	actor, err := c.actor()
	if err != nil {
		return err
	}
	id, err := uuid.Parse(c.ID)
	if err != nil {
		return fmt.Errorf("%w: %q", outbox.ErrNotFound, c.ID)
	}
	return withSubscriptions(g, c.outboxFlags, func(ctx context.Context, svc *outbox.Service) error {
		if err := svc.Delete(ctx, id, "cli:"+actor, c.Note); err != nil {
			return err
		}
		fmt.Printf("subscription %s removed\n", id)
		return nil
	})
}

func (c *subscriptionsReplayCmd) Run(g *globals) error {
	actor, err := c.actor()
	if err != nil {
		return err
	}
	id, err := uuid.Parse(c.ID)
	if err != nil {
		return fmt.Errorf("%w: %q", outbox.ErrNotFound, c.ID)
	}
	from := outbox.ReplayFrom{After: c.From}
	if t, err := time.Parse(time.RFC3339Nano, c.From); err == nil {
		from = outbox.ReplayFrom{FromTime: t}
	}
	return withSubscriptions(g, c.outboxFlags, func(ctx context.Context, svc *outbox.Service) error {
		sub, err := svc.Replay(ctx, id, from, "cli:"+actor, c.Note)
		if err != nil {
			return err
		}
		fmt.Printf("subscription %s: replay stored, up to cursor %s; the sender of `onceledger serve` sends it\n", id,
			httpapi.NewSubscriptionJSON(sub).Replay.Until)
		return nil
	})
}
