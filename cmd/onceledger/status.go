package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
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
	st, err := projections.Status(g.ctx, store, readmodel.New(pool), projections.StatusOptions{Inbox: true, Settlement: true})
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	view := newStatusView(st)
	if c.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(view)
	}
	return writeStatusText(w, view)
}

// statusView is the --json output. Positions are given as in
// /v1/projections: position is the global sequence number (the prepare half
// of the feed position), position_commit the commit half; each projection
// has the one JSON shape of views.ProjectionStatus.
type statusView struct {
	Head        uint64                   `json:"head"`
	HeadCommit  uint64                   `json:"head_commit"`
	Projections []views.ProjectionStatus `json:"projections"`
	Inbox       map[string]int64         `json:"inbox"` // every known status, 0 when none
	// LastImports: when each provider's settlement lines were last
	// recorded; OpenItems: open reconciliation items per kind.
	LastImports map[string]time.Time `json:"last_settlement_imports"`
	OpenItems   map[string]int64     `json:"open_reconciliation_items"`
}

func newStatusView(st views.Status) statusView {
	v := statusView{Head: st.Head.Prepare, HeadCommit: st.Head.Commit, Projections: st.Projections, Inbox: st.Inbox,
		LastImports: st.LastImports, OpenItems: st.OpenItems}
	if v.LastImports == nil {
		v.LastImports = map[string]time.Time{}
	}
	if v.OpenItems == nil {
		v.OpenItems = map[string]int64{}
	}
	if v.Projections == nil {
		v.Projections = []views.ProjectionStatus{}
	}
	return v
}

// writeStatusText prints the view for a person: the head, one table row per
// projection, the full error of any stopped projection, and the inbox.
func writeStatusText(w io.Writer, v statusView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "feed head\t%s\n\n", seq(eventstore.Position{Commit: v.HeadCommit, Prepare: v.Head}))
	fmt.Fprintln(tw, "PROJECTION\tSTATUS\tRUNNING\tPOSITION\tLAG (EVENTS)\tLAG (TIME)\tUPDATED")
	for _, p := range v.Projections {
		status := p.Status
		if p.LastError != "" {
			status += " (error)"
		}
		lag := strconv.FormatInt(p.Lag, 10)
		if p.LagCapped {
			lag = "≥" + lag
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, status, yesNo(p.Active),
			seq(p.Position), lag, ago(p.LagSeconds), p.UpdatedAt.Format(time.RFC3339))
	}
	for _, p := range v.Projections {
		if p.LastError == "" {
			continue
		}
		at := ""
		if p.ErrorPosition != nil {
			at = " at event " + strconv.FormatUint(p.ErrorPosition.Prepare, 10) + " (" + p.ErrorPosition.String() + ")"
		}
		fmt.Fprintf(tw, "\n%s stopped%s:\n  %s\n", p.Name, at, p.LastError)
	}
	fmt.Fprintln(tw, "\nINBOX\tROWS")
	for _, s := range inboxOrder(v.Inbox) {
		fmt.Fprintf(tw, "%s\t%d\n", s, v.Inbox[s])
	}
	fmt.Fprintln(tw, "\nSETTLEMENT IMPORTS\tLAST LINE RECORDED")
	if len(v.LastImports) == 0 {
		fmt.Fprintln(tw, "(none)\t")
	}
	for _, p := range slices.Sorted(maps.Keys(v.LastImports)) {
		fmt.Fprintf(tw, "%s\t%s\n", p, v.LastImports[p].UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(tw, "\nOPEN RECONCILIATION ITEMS\tCOUNT")
	if len(v.OpenItems) == 0 {
		fmt.Fprintln(tw, "(none)\t")
	}
	for _, k := range slices.Sorted(maps.Keys(v.OpenItems)) {
		fmt.Fprintf(tw, "%s\t%d\n", k, v.OpenItems[k])
	}
	return tw.Flush()
}

// seq shows a position as its global sequence number; 0/0 is the empty
// feed's start.
func seq(p eventstore.Position) string {
	if p == eventstore.Start {
		return "0 (start)"
	}
	return strconv.FormatUint(p.Prepare, 10)
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
	out := append([]string(nil), views.InboxStatuses...)
	var extra []string
	for s := range counts {
		if !slices.Contains(out, s) {
			extra = append(extra, s)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}
