package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

type statusCmd struct {
	JSON bool `name:"json" help:"Machine-readable output."`
}

func (c *statusCmd) Run(g *globals) error {
	return c.run(g, os.Stdout)
}

// run prints the status of the database and event store g configures.
// The checkpoints and the inbox are always in Postgres; the feed (head and
// lag) is read from the configured event store.
func (c *statusCmd) run(g *globals, w io.Writer) error {
	pool, err := openPool(g.ctx, g.cli.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, closeStore, _, err := openEventStore(g.ctx, g.cli.EventStore, pool)
	if err != nil {
		return err
	}
	defer func() { _ = closeStore() }()
	view, err := readStatus(g.ctx, store, readmodel.New(pool), time.Now)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if c.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(view)
	}
	return writeStatusText(w, view)
}

// statusView is the --json output. Positions are given as in
// /v1/projections: position is the global sequence number (the prepare half
// of the feed position), position_commit the commit half.
type statusView struct {
	Head        uint64           `json:"head"`
	HeadCommit  uint64           `json:"head_commit"`
	Projections []projectionView `json:"projections"`
	Inbox       map[string]int64 `json:"inbox"` // every known status, 0 when none
}

type projectionView struct {
	Name           string `json:"name"`
	Status         string `json:"status"` // live, stopped, rebuilding
	Active         bool   `json:"active"` // a projector holds the projection now
	Position       uint64 `json:"position"`
	PositionCommit uint64 `json:"position_commit"`
	// Lag counts events after the checkpoint up to the head; LagSeconds is
	// the age of the oldest of them (0 when caught up).
	Lag           int64        `json:"lag"`
	LagSeconds    float64      `json:"lag_seconds"`
	Error         string       `json:"error,omitempty"`
	ErrorPosition *positionRef `json:"error_position,omitempty"`
	UpdatedAt     time.Time    `json:"updated_at"`
}

type positionRef struct {
	Commit  uint64 `json:"commit"`
	Prepare uint64 `json:"prepare"`
}

// readStatus gathers projections.Status and adds to it how old the oldest
// unapplied event of each lagging projection is: a count of events says how
// much work is left, an age says how stale the read model is.
func readStatus(ctx context.Context, feed projections.Feed, db projections.AuditDB, now func() time.Time) (statusView, error) {
	rep, err := projections.Status(ctx, feed, db)
	if err != nil {
		return statusView{}, err
	}
	v := statusView{
		Head: rep.Head.Prepare, HeadCommit: rep.Head.Commit,
		Projections: []projectionView{},
		Inbox:       map[string]int64{},
	}
	for _, s := range postgres.InboxStatuses {
		v.Inbox[s] = 0
	}
	for s, n := range rep.Inbox {
		v.Inbox[s] = n
	}
	t := now()
	for _, p := range rep.Projections {
		pv := projectionView{
			Name: p.Name, Status: p.Status, Active: p.Active,
			Position: p.Position.Prepare, PositionCommit: p.Position.Commit,
			Lag: p.Lag, Error: p.LastError, UpdatedAt: p.UpdatedAt.UTC(),
		}
		if p.ErrorPosition != nil {
			pv.ErrorPosition = &positionRef{Commit: p.ErrorPosition.Commit, Prepare: p.ErrorPosition.Prepare}
		}
		if p.Lag > 0 {
			evs, err := feed.ReadAll(ctx, p.Position, 1)
			if err != nil {
				return statusView{}, fmt.Errorf("oldest unapplied event of %s: %w", p.Name, err)
			}
			if len(evs) == 1 && !rep.Head.Less(evs[0].Position) {
				pv.LagSeconds = max(0, t.Sub(evs[0].RecordedAt).Seconds())
			}
		}
		v.Projections = append(v.Projections, pv)
	}
	return v, nil
}

// writeStatusText prints the view for a person: the head, one table row per
// projection, the full error of any stopped projection, and the inbox.
func writeStatusText(w io.Writer, v statusView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "feed head\t%s\n\n", seq(v.Head, v.HeadCommit))
	fmt.Fprintln(tw, "PROJECTION\tSTATUS\tRUNNING\tPOSITION\tLAG (EVENTS)\tLAG (TIME)\tUPDATED")
	for _, p := range v.Projections {
		status := p.Status
		if p.Error != "" {
			status += " (error)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Name, status, yesNo(p.Active),
			seq(p.Position, p.PositionCommit), p.Lag, ago(p.LagSeconds), p.UpdatedAt.Format(time.RFC3339))
	}
	for _, p := range v.Projections {
		if p.Error == "" {
			continue
		}
		at := ""
		if p.ErrorPosition != nil {
			at = " at event " + strconv.FormatUint(p.ErrorPosition.Prepare, 10) +
				" (" + eventstore.Position{Commit: p.ErrorPosition.Commit, Prepare: p.ErrorPosition.Prepare}.String() + ")"
		}
		fmt.Fprintf(tw, "\n%s stopped%s:\n  %s\n", p.Name, at, p.Error)
	}
	fmt.Fprintln(tw, "\nINBOX\tROWS")
	for _, s := range inboxOrder(v.Inbox) {
		fmt.Fprintf(tw, "%s\t%d\n", s, v.Inbox[s])
	}
	return tw.Flush()
}

// seq shows a position as its global sequence number; 0/0 is the empty
// feed's start.
func seq(prepare, commit uint64) string {
	if prepare == 0 && commit == 0 {
		return "0 (start)"
	}
	return strconv.FormatUint(prepare, 10)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ago rounds a lag for reading: whole seconds, or "0s" when caught up.
func ago(seconds float64) string {
	if seconds <= 0 {
		return "0s"
	}
	d := time.Duration(seconds * float64(time.Second))
	if d < time.Second {
		return "<1s"
	}
	return d.Round(time.Second).String()
}

// inboxOrder lists the known statuses first, in their lifecycle order, then
// any other status found.
func inboxOrder(counts map[string]int64) []string {
	out := append([]string(nil), postgres.InboxStatuses...)
	var extra []string
	for s := range counts {
		if !slices.Contains(out, s) {
			extra = append(extra, s)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}
