package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/period"
)

// periodCmd closes and reopens accounting periods through the operations
// service: each action is an event in the "periods" stream with its actor
// and note, the same as POST /v1/periods/{p}/close does over HTTP. The
// ledger projection then freezes (or unfreezes) the period's trial balance.
type periodCmd struct {
	Close  periodCloseCmd  `cmd:"" help:"Close (freeze) an accounting period; every earlier one must be closed."`
	Reopen periodReopenCmd `cmd:"" help:"Reopen the last closed period, saying why."`
}

// actorFlag is who acts: the CLI has no token, so the actor is named on
// the command line, by default the operating-system user running it.
type actorFlag struct {
	Actor string `name:"actor" help:"Who acts, recorded on the event (default: the operating-system user)."`
}

func (a actorFlag) actor() (string, error) {
	if s := strings.TrimSpace(a.Actor); s != "" {
		return s, nil
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if s := strings.TrimSpace(os.Getenv("USER")); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("%w: pass --actor", period.ErrActorRequired)
}

type periodCloseCmd struct {
	Period string `arg:"" help:"The period, YYYY-MM in ONCELEDGER_REPORTING_TZ."`
	Note   string `name:"note" help:"Why or how it was closed, recorded on the event."`
	actorFlag
}

type periodReopenCmd struct {
	Period string `arg:"" help:"The period, YYYY-MM (the last closed one)."`
	Reason string `name:"reason" required:"" help:"Why it is reopened (required), recorded on the event."`
	actorFlag
}

func (c *periodCloseCmd) Run(g *globals) error {
	p, actor, err := periodArgs(c.Period, c.actorFlag)
	if err != nil {
		return err
	}
	return withPeriods(g, func(ctx context.Context, ops *operations.Periods) error {
		ev, err := ops.ClosePeriod(ctx, p, actor, c.Note)
		if err != nil {
			return err
		}
		printClosed(os.Stdout, ev)
		return nil
	})
}

func (c *periodReopenCmd) Run(g *globals) error {
	p, actor, err := periodArgs(c.Period, c.actorFlag)
	if err != nil {
		return err
	}
	return withPeriods(g, func(ctx context.Context, ops *operations.Periods) error {
		ev, err := ops.ReopenPeriod(ctx, p, actor, c.Reason)
		if err != nil {
			return err
		}
		printReopened(os.Stdout, ev)
		return nil
	})
}

func periodArgs(s string, a actorFlag) (period.Period, string, error) {
	p, err := period.Parse(s)
	if err != nil {
		return period.Period{}, "", err
	}
	actor, err := a.actor()
	return p, actor, err
}

// withPeriods opens the configured event store and runs fn with the
// period commands in the reporting zone.
func withPeriods(g *globals, fn func(context.Context, *operations.Periods) error) error {
	zone, err := g.cli.zone()
	if err != nil {
		return err
	}
	return withEventStore(g, func(store eventstore.Store) error {
		return fn(g.ctx, operations.NewPeriods(store, zone, nil))
	})
}

func printClosed(w io.Writer, e period.Closed) {
	fmt.Fprintf(w, "period %s closed by %s at %s (zone %s)\n", e.Period, e.Actor, e.At.Format(time.RFC3339), e.Zone)
	if e.Note != "" {
		fmt.Fprintf(w, "note: %s\n", e.Note)
	}
	fmt.Fprintln(w, "the ledger projection freezes its trial balance when it reads the event (see `onceledger status`)")
}

func printReopened(w io.Writer, e period.Reopened) {
	fmt.Fprintf(w, "period %s reopened by %s at %s\nreason: %s\n", e.Period, e.Actor, e.At.Format(time.RFC3339), e.Reason)
}
