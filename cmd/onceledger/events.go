package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections/outbound"
)

// eventsCmd is `onceledger events`: the outbound business events
// (docs/events.md).
type eventsCmd struct {
	Tail eventsTailCmd `cmd:"" help:"Print the outbound business events as JSON lines, following the feed until interrupted."`
}

type eventsTailCmd struct {
	After string   `name:"after" help:"Start after this cursor (a next of GET /v1/events, or the cursor tail printed last); default: the beginning."`
	Type  []string `name:"type" help:"Only these public event types (repeatable or comma-separated)."`
}

func (c *eventsTailCmd) Run(g *globals) error {
	after, err := outbound.ParseCursor(c.After)
	if err != nil {
		return fmt.Errorf("--after: %w", err)
	}
	q := outbound.Query{After: after, Types: c.Type, Limit: outbound.MaxLimit}
	return withEventStore(g, func(store eventstore.Store) error {
		return tailEvents(g.ctx, outbound.NewFeed(store), q, os.Stdout, os.Stderr)
	})
}

// pager is the part of outbound.Feed tail needs.
type pager interface {
	Page(ctx context.Context, q outbound.Query) (outbound.Page, error)
}

// tailEvents prints every event after q.After as one JSON line, long-polling
// for more until ctx ends (an interrupt); then it prints the cursor reached
// to errw, so that `--after` resumes exactly there.
func tailEvents(ctx context.Context, feed pager, q outbound.Query, out, errw io.Writer) error {
	enc := json.NewEncoder(out)
	q.Wait = outbound.MaxWait
	defer func() { fmt.Fprintf(errw, "cursor %s\n", outbound.Cursor(q.After)) }()
	for {
		page, err := feed.Page(ctx, q)
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range page.Events {
			if err := enc.Encode(e); err != nil {
				return err
			}
			q.After = e.Position
		}
		q.After = page.Next
	}
}
