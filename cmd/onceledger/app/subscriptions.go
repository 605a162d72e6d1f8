package app

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/providers/registry"
)

// subscriptions wires the push subscriptions: the operators' service
// (POST /v1/subscriptions…, `onceledger subscriptions`) and the sender
// serve runs. Their storage writes through the read-model pool: it never
// appends events.
func (c *Core) subscriptionsStore() *postgres.Subscriptions {
	return postgres.NewSubscriptions(c.rmPool)
}

// sealer is ONCELEDGER_SECRETS_KEY parsed: nil when unset (creating a
// subscription is then refused), an error when malformed (the app does not
// start with it).
func sealer(key string) (*outbox.Sealer, error) {
	if key == "" {
		return nil, nil
	}
	return outbox.ParseKey(key)
}

// Subscriptions is the operators' service of push subscriptions.
func (c *Core) Subscriptions() *outbox.Service {
	names := []string{}
	for _, p := range registry.Providers() {
		names = append(names, p.Name)
	}
	return outbox.NewService(c.subscriptionsStore(), c.events.Store, outbox.ServiceOptions{
		Sealer: c.sealer, Providers: names, AllowPrivate: c.cfg.OutboxAllowPrivate, Items: c.recon, Now: c.cfg.Now,
		Changed: c.wakeSender,
	})
}

// wakeSender makes this process's sender (if it runs one) lease at once: a
// change made here takes effect without waiting for its lease renewal. A
// change made elsewhere (the CLI, another instance) is seen at the renewal.
func (c *Core) wakeSender() {
	if s := c.sender.Load(); s != nil {
		s.Wake()
	}
}

// checkSecretsKey refuses to serve subscriptions it could not sign for:
// once one exists, ONCELEDGER_SECRETS_KEY is required, and a key that
// does not open the stored secrets stops serve at start (VerifySecretsKey).
func (c *Core) checkSecretsKey(ctx context.Context) error {
	if c.sealer != nil {
		return c.VerifySecretsKey(ctx)
	}
	subs, err := c.subscriptionsStore().ListSubscriptions(ctx)
	if err != nil {
		return err
	}
	if len(subs) > 0 {
		return fmt.Errorf("%d push subscription(s) exist: %w", len(subs), outbox.ErrNoSecretsKey)
	}
	return nil
}

// Sender is the push subscriptions' sender over the app's feed, as serve
// runs it (cfg.Outbox tunes it).
func (a *App) Sender() *outbox.Sender {
	o := a.cfg.Outbox
	client := o.Client
	if client == nil {
		client = outbox.NewClient(a.cfg.OutboxAllowPrivate)
	}
	return &outbox.Sender{
		Feed: a.outbound, Store: a.subscriptionsStore(), Sealer: a.sealer, Client: client,
		Now: o.Now, Options: o.Options, Log: a.log, Disabled: a.subscriptionDisabled,
	}
}

// subscriptionDisabled is told of a subscription the sender disabled: it
// opens the operators' item (subscription_disabled, in GET
// /v1/reconciliation and the console), which enabling resolves.
func (a *App) subscriptionDisabled(ctx context.Context, id uuid.UUID, url, lastError string) {
	a.log.Error("push subscription disabled after its retry schedule; re-enable it (POST /v1/subscriptions/{id}/enable) once the endpoint answers",
		"subscription", id, "host", outbox.Host(url), "last_error", lastError)
	if err := a.recon.OpenSubscriptionDisabled(ctx, id, url); err != nil {
		a.log.Error("push subscription disabled: could not open its item", "subscription", id, "error", err)
	}
}

// startSender runs the sender until ctx ends.
func (a *App) startSender(ctx context.Context, wg *sync.WaitGroup) {
	s := a.Sender()
	a.sender.Store(s)
	wg.Go(func() {
		if err := s.Run(ctx); err != nil {
			a.log.Error("push subscriptions sender stopped", "error", err)
		}
	})
}

// OutboxConfig tunes the push subscriptions' sender (tests, the bench).
type OutboxConfig struct {
	Options outbox.SenderOptions
	// Now is the retry schedule's clock (nil: time.Now).
	Now func() time.Time
	// Client replaces the sender's HTTP client (nil: outbox.NewClient).
	Client *http.Client
	// Off: serve runs no sender.
	Off bool
}

// VerifySecretsKey checks ONCELEDGER_SECRETS_KEY against the stored check
// value (writing it when there is none yet): nothing to check without a
// key (issue 33; outbox.VerifyKey).
func (c *Core) VerifySecretsKey(ctx context.Context) error {
	if c.sealer == nil {
		return nil
	}
	return outbox.VerifyKey(ctx, c.sealer, c.subscriptionsStore())
}
