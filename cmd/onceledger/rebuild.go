package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

type rebuildCmd struct {
	Names      []string `arg:"" optional:"" help:"Projections to rebuild (ledger, payments, reconciliation)."`
	All        bool     `help:"Rebuild every projection."`
	VerifyOnly bool     `name:"verify-only" help:"Compare and report; leave the live tables alone."`
	SwapAll    bool     `name:"swap-all" help:"Replace every live table by its rebuilt copy, even one equal to history (by default an equal table is kept and one with few differing rows repaired in place)."`
	BatchSize  int      `name:"batch-size" default:"5000" help:"Events per bulk batch."`
}

func (c *rebuildCmd) Validate() error {
	if !c.All && len(c.Names) == 0 {
		return fmt.Errorf("name the projections to rebuild, or pass --all")
	}
	if c.All && len(c.Names) > 0 {
		return fmt.Errorf("--all and projection names are exclusive")
	}
	return nil
}

// projectionService opens what every projection command needs: the
// database, the configured event store and the read-model adapter.
func projectionService(g *globals) (*projections.Service, func(), error) {
	zone, err := g.cli.zone()
	if err != nil {
		return nil, nil, err
	}
	pool, err := openRebuildPool(g.ctx, g.cli.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	store, closeStore, _, err := openEventStore(g.ctx, g.cli.EventStore, pool)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	// The read model writes through its own marked pool, so the feed
	// horizon passes a rebuild's transactions: live projectors keep up.
	rmPool, err := postgres.NewReadModelPool(g.ctx, pool)
	if err != nil {
		_ = closeStore()
		pool.Close()
		return nil, nil, err
	}
	svc := projections.NewService(store, readmodel.New(rmPool), g.log, projections.ReportingZone(zone))
	return svc, func() { rmPool.Close(); _ = closeStore(); pool.Close() }, nil
}

// rebuildConns is the least pool size of the projection commands: a
// rebuild writes on several connections at once (the ledger's lane and its
// two loaders, the payments' two lanes, reconciliation's), and its ledger
// lane waits for its loaders while it holds a connection.
const rebuildConns = 8

// openRebuildPool opens the database with at least rebuildConns
// connections (pgxpool's default is 4).
func openRebuildPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("ONCELEDGER_DATABASE_URL: %w", err)
	}
	cfg.MaxConns = max(cfg.MaxConns, rebuildConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// rebuildMemory tunes the garbage collector for a rebuild, unless GOGC or
// GOMEMLIMIT say otherwise: a rebuild allocates briskly (a decoded event,
// its rows, its COPY buffers) but keeps little (a few batches in flight, the
// payments rows of the active streams), so collecting at 4x the live heap
// instead of 2x halves the collector's CPU, while a soft limit keeps the
// heap well under the 256 MiB a rebuild may use.
func rebuildMemory() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(300)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(160 << 20)
	}
}

func (c *rebuildCmd) Run(g *globals) error {
	rebuildMemory()
	svc, done, err := projectionService(g)
	if err != nil {
		return err
	}
	defer done()
	names := c.Names
	if c.All {
		names = nil
	}
	progress := newProgress(os.Stderr, g)
	defer progress.finish()
	rep, err := svc.Rebuild(g.ctx, names, projections.RebuildOptions{
		VerifyOnly: c.VerifyOnly,
		SwapAll:    c.SwapAll,
		BatchSize:  c.BatchSize,
		Progress:   progress.update,
	})
	progress.finish()
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	printReport(os.Stdout, rep)
	if len(rep.Differences) > 0 {
		return &exitError{code: 2, err: fmt.Errorf("rebuild found %d difference(s) between the live tables and history", len(rep.Differences))}
	}
	return nil
}

func printReport(w io.Writer, rep projections.Report) {
	rate := 0.0
	if rep.Duration > 0 {
		rate = float64(rep.Events) / rep.Duration.Seconds()
	}
	fmt.Fprintf(w, "rebuilt %v from %d events in %s (%.0f events/s), at position %s\n",
		rep.Projections, rep.Events, rep.Duration.Round(time.Millisecond), rate, rep.Position)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tLIVE ROWS\tREBUILT ROWS\tDIFFERING ROWS")
	for _, t := range rep.Tables {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", t.Table, t.LiveRows, t.RebuiltRows, t.DifferingRows)
	}
	_ = tw.Flush()
	if len(rep.Differences) == 0 {
		fmt.Fprintln(w, "comparison: live tables equal history")
	} else {
		fmt.Fprintf(w, "comparison: %d difference(s):\n", len(rep.Differences))
		for _, d := range rep.Differences {
			fmt.Fprintln(w, "  "+d.String())
		}
	}
	switch {
	case rep.Swapped:
		byRepair := map[string][]string{}
		for _, t := range rep.Tables {
			byRepair[t.Repair] = append(byRepair[t.Repair], t.Table)
		}
		var how []string
		for _, r := range []string{projections.RepairReplaced, projections.RepairPatched, projections.RepairNone} {
			if len(byRepair[r]) > 0 {
				how = append(how, r+": "+strings.Join(byRepair[r], ", "))
			}
		}
		fmt.Fprintf(w, "swap: rebuilt tables are live (%s)\n", strings.Join(how, "; "))
	default:
		fmt.Fprintln(w, "swap: not swapped (--verify-only)")
	}
}

// progress renders a bar on a terminal and plain log lines elsewhere.
type progress struct {
	bar      *progressbar.ProgressBar
	g        *globals
	lastLog  time.Time
	finished bool
}

func newProgress(w *os.File, g *globals) *progress {
	p := &progress{g: g}
	if term.IsTerminal(int(w.Fd())) {
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("replaying events"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("events"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *progress) update(done, total int64) {
	if p.bar != nil {
		if total > 0 && p.bar.GetMax64() != total {
			p.bar.ChangeMax64(total)
		}
		_ = p.bar.Set64(done)
		return
	}
	if time.Since(p.lastLog) >= 2*time.Second {
		p.lastLog = time.Now()
		p.g.log.Info("rebuild progress", "events", done, "total", total)
	}
}

func (p *progress) finish() {
	if p.bar != nil && !p.finished {
		_ = p.bar.Finish()
	}
	p.finished = true
}

type verifyCmd struct{}

func (verifyCmd) Run(g *globals) error {
	svc, done, err := projectionService(g)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	violations, err := svc.Verify(ctx)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if len(violations) == 0 {
		fmt.Println("verify: ok — every event's postings balance per currency, balances equal the sum of their entries, projections are at or behind the head")
		return nil
	}
	for _, v := range violations {
		fmt.Println("VIOLATION", v.String())
	}
	return &exitError{code: 2, err: fmt.Errorf("verify: %d invariant violation(s)", len(violations))}
}
