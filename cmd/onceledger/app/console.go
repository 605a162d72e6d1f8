package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/adapters/console"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/adapters/postgres/sessionstore"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// actions wires the operators' acting services: resolving and reopening
// reconciliation items (events in the item's stream) and re-driving
// stored deliveries with the current code.
func (a *Core) actions() {
	a.recon = operations.NewReconciliation(a.events.Store, nil)
	a.redriver = ingest.NewRedriver(a.service, postgres.NewInbox(a.pool), renormalizers(a.cfg.Providers), a.log)
}

// renormalizers are the configured adapters that can re-normalize a stored
// delivery, by the provider name the inbox keeps.
func renormalizers(ps map[string]providers.Adapter) map[string]ingest.Renormalizer {
	out := map[string]ingest.Renormalizer{}
	for name, p := range ps {
		if r, ok := p.(ingest.Renormalizer); ok {
			out[name] = r
		}
	}
	return out
}

// Redriver re-drives stored deliveries (onceledger redrive).
func (a *Core) Redriver() *ingest.Redriver { return a.redriver }

// Reconciliation resolves and reopens reconciliation items.
func (a *Core) Reconciliation() *operations.Reconciliation { return a.recon }

// The console reads through the same read side as /v1: the read-model
// store, the projections' status reader (lag counted on the configured
// feed) and the configured event store for timelines.
var (
	_ console.ReadModel         = (*readmodel.Store)(nil)
	_ console.PeriodReader      = (*readmodel.Store)(nil)
	_ console.ProjectionsReader = projections.StatusReader{}
	_ console.Sessions          = (*sessionstore.Store)(nil)
)

// consoleRoutes mounts the console at /console: the read side of /v1
// (a.reads), timelines from the configured event store, sessions shared by
// every instance, and the acting ports on the same services as /v1.
func (a *App) consoleRoutes() (func(*mux.Router), error) {
	h, err := console.New(console.Config{
		Tokens:        a.tokens,
		Sessions:      sessionstore.New(a.pool),
		Read:          a.reads.Query,
		Projections:   a.reads.Projections,
		Events:        a.events.Store,
		Periods:       a.reads.Query,
		Recon:         consoleRecon{a.recon},
		PeriodActions: consolePeriods{a.Periods()},
		Redrive:       consoleRedrive{a.redriver},
		Subscriptions: consoleSubs{a.Subscriptions()},
		Balances:      a.reads.Query,
		BalanceActs:   consoleBalances{a.Balances()}, // balances.go
		Expected:      a.reads.Query,
		SecureCookies: a.cfg.ConsoleSecureCookies,
		Zone:          a.cfg.ReportingZone,
		Logger:        a.log,
	})
	if err != nil {
		return nil, err
	}
	return func(r *mux.Router) {
		r.PathPrefix(console.Prefix).Handler(h)
	}, nil
}

// consoleRecon is the console's ReconActions over the operations service.
type consoleRecon struct{ s *operations.Reconciliation }

func (c consoleRecon) Resolve(ctx context.Context, it console.ItemRef, actor, note string) error {
	_, err := c.s.Resolve(ctx, operations.ItemAction{ID: views.ReconciliationID(it.StreamID, it.Kind, it.Key), Actor: actor, Note: note})
	return consoleErr(err)
}

func (c consoleRecon) Reopen(ctx context.Context, it console.ItemRef, actor, note string) error {
	_, err := c.s.Reopen(ctx, operations.ItemAction{ID: views.ReconciliationID(it.StreamID, it.Kind, it.Key), Actor: actor, Note: note})
	return consoleErr(err)
}

// consolePeriods is the console's PeriodActions over the operations
// service that POST /v1/periods/{p}/close|reopen use.
type consolePeriods struct{ s *operations.Periods }

func (c consolePeriods) ClosePeriod(ctx context.Context, p period.Period, actor, note string) error {
	_, err := c.s.ClosePeriod(ctx, p, actor, note)
	return consoleErr(err)
}

func (c consolePeriods) ReopenPeriod(ctx context.Context, p period.Period, actor, reason string) error {
	_, err := c.s.ReopenPeriod(ctx, p, actor, reason)
	return consoleErr(err)
}

// consoleErr marks the domain's refusals with the console's sentinels, so
// that it answers them with the right status.
func consoleErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, payment.ErrItemNotFound):
		return fmt.Errorf("%w: %w", console.ErrNotFound, err)
	case errors.Is(err, payment.ErrItemResolved), errors.Is(err, payment.ErrItemOpen),
		errors.Is(err, period.ErrPeriodNotEnded), errors.Is(err, period.ErrEarlierPeriodOpen), errors.Is(err, period.ErrAlreadyClosed),
		errors.Is(err, period.ErrNotClosed), errors.Is(err, period.ErrLaterPeriodClosed), errors.Is(err, period.ErrZoneMismatch):
		return fmt.Errorf("%w: %w", console.ErrConflict, err)
	case errors.Is(err, payment.ErrNoteRequired), errors.Is(err, payment.ErrActorRequired), errors.Is(err, ingest.ErrBadRedrive),
		errors.Is(err, period.ErrInvalidPeriod), errors.Is(err, period.ErrReasonRequired), errors.Is(err, period.ErrActorRequired):
		return fmt.Errorf("%w: %w", console.ErrInvalid, err)
	}
	return err
}

// consoleRedrive is the console's Redriver over the ingest redriver.
type consoleRedrive struct{ r *ingest.Redriver }

func (c consoleRedrive) Redrive(ctx context.Context, req console.RedriveRequest) (console.RedriveResult, error) {
	f := ingest.RedriveFilter{Provider: req.Filter.Provider, Type: req.Filter.Type, Status: req.Filter.Status,
		From: req.Filter.From, To: req.Filter.To}
	for _, k := range req.Keys {
		f.Keys = append(f.Keys, ingest.InboxKey{Provider: k.Provider, DedupKey: k.DedupKey})
	}
	n, err := c.r.Redrive(ctx, f, req.Actor)
	if err != nil {
		return console.RedriveResult{}, consoleErr(err)
	}
	return console.RedriveResult{Selected: n.Selected, Recorded: n.Recorded, Ignored: n.Ignored, Erased: n.Erased, Failed: n.Failed}, nil
}
