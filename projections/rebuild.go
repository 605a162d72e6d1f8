package projections

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// ShadowDB is what a rebuild needs from the read-model database besides the
// runtime's part: shadow copies of the read-model tables (<table>_shadow).
type ShadowDB interface {
	RuntimeDB
	// BeginShadow starts a batch writing to the shadow tables; bulk means
	// the shadow has no indexes yet and derived tables (balances) are left
	// to FinishBulk.
	BeginShadow(ctx context.Context, bulk bool) (Batch, error)
	// PrepareShadow (re)creates empty shadow tables shaped like the live
	// ones, without their secondary indexes.
	PrepareShadow(ctx context.Context, tables []string) error
	// FinishBulk computes derived tables from the bulk load, then builds
	// the live tables' indexes on the shadows.
	FinishBulk(ctx context.Context, tables []string) error
	// Compare compares shadow and live tables: counts, sums, rows (at most
	// maxRows differences of each table are detailed).
	Compare(ctx context.Context, tables []string, maxRows int) ([]TableComparison, []Difference, error)
	// Swap replaces the live tables by their shadows in one transaction
	// (grants and dependent views carried over) and sets the checkpoints.
	Swap(ctx context.Context, tables []string, checkpoints map[string]eventstore.Position) error
	DropShadow(ctx context.Context, tables []string) error
	LockHeld(ctx context.Context, kind LockKind, name string) (bool, error)
}

// RebuildOptions tune Rebuild.
type RebuildOptions struct {
	// VerifyOnly compares and reports, and leaves the live tables alone.
	VerifyOnly bool
	// Progress, if set, is called after each batch with the events
	// replayed so far and the total (-1: unknown, the feed cannot count).
	Progress func(done, total int64)
	// BatchSize of the bulk load; default 5000.
	BatchSize int
	// MaxRowDifferences detailed per table; default 20.
	MaxRowDifferences int
}

// Kinds of Difference.
const (
	DiffRowCount         = "row_count"
	DiffSum              = "sum"
	DiffMissingInLive    = "missing_in_live"
	DiffMissingInRebuilt = "missing_in_rebuilt"
	DiffRow              = "row_differs"
)

// Difference is one way the live tables differ from what history says.
type Difference struct {
	Table   string
	Kind    string
	Key     string // the row's key, or account/currency for sums; empty for counts
	Live    string
	Rebuilt string
}

func (d Difference) String() string {
	key := ""
	if d.Key != "" {
		key = " " + d.Key
	}
	return fmt.Sprintf("%s %s%s: live=%s rebuilt=%s", d.Table, d.Kind, key, orNone(d.Live), orNone(d.Rebuilt))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// TableComparison summarizes one table of a rebuild.
type TableComparison struct {
	Table         string
	LiveRows      int64
	RebuiltRows   int64
	DifferingRows int64
}

// Report is the outcome of a rebuild. A non-empty Differences means the
// live tables did not match history (the CLI exits non-zero); unless
// VerifyOnly, the rebuilt tables replaced them anyway.
type Report struct {
	Projections []string
	Position    eventstore.Position // where the compared (and swapped-in) tables are
	Events      int64               // events replayed
	Tables      []TableComparison
	Differences []Difference
	Swapped     bool
	Duration    time.Duration
}

// Rebuild replays the whole feed into shadow tables of the named
// projections (all when names is empty) at bulk speed, catches up with the
// live projectors, pauses them, compares shadow and live at one position,
// and (unless VerifyOnly) swaps the shadows in, in one short transaction.
// Live queries keep answering throughout; live projectors wait only during
// the comparison and the swap.
func Rebuild(ctx context.Context, feed Feed, db ShadowDB, all []Projection, names []string, opts RebuildOptions) (Report, error) {
	start := time.Now()
	projs, err := selectProjections(all, names)
	if err != nil {
		return Report{}, err
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 5000
	}
	if opts.MaxRowDifferences <= 0 {
		opts.MaxRowDifferences = 20
	}
	rep := Report{}
	var tables []string
	for _, p := range projs {
		rep.Projections = append(rep.Projections, p.Name())
		tables = append(tables, p.Tables()...)
	}
	// Cleanup must run even when ctx was canceled.
	bg := context.WithoutCancel(ctx)

	for _, p := range projs {
		l, ok, err := db.TryLock(ctx, LockRebuild, p.Name())
		if err != nil {
			return rep, err
		}
		if !ok {
			return rep, fmt.Errorf("a rebuild of %s is already running", p.Name())
		}
		defer func() { _ = l.Release(bg) }()
	}
	if err := db.EnsureCheckpoints(ctx, rep.Projections); err != nil {
		return rep, err
	}
	for _, p := range projs {
		if err := db.SetStatus(ctx, p.Name(), StatusRebuilding); err != nil {
			return rep, err
		}
	}
	defer func() {
		// The status says what the live projector does: live if one holds
		// its lock now.
		for _, p := range projs {
			st := StatusStopped
			if held, err := db.LockHeld(bg, LockActive, p.Name()); err == nil && held {
				st = StatusLive
			}
			_ = db.SetStatus(bg, p.Name(), st)
		}
	}()

	if err := db.PrepareShadow(ctx, tables); err != nil {
		return rep, fmt.Errorf("prepare shadow tables: %w", err)
	}
	swapped := false
	defer func() {
		if !swapped {
			_ = db.DropShadow(bg, tables)
		}
	}()

	// Bulk load, then indexes, then catch up with the feed while the live
	// projectors still run, so that the pause below is short.
	progress := func(n int) {
		rep.Events += int64(n)
		if opts.Progress != nil {
			opts.Progress(rep.Events, -1)
		}
	}
	shadowAt, err := replayShadow(ctx, feed, db, projs, eventstore.Start, nil, opts.BatchSize, true, progress)
	if err != nil {
		return rep, err
	}
	if err := db.FinishBulk(ctx, tables); err != nil {
		return rep, fmt.Errorf("finish bulk load: %w", err)
	}
	if shadowAt, err = replayShadow(ctx, feed, db, projs, shadowAt, nil, opts.BatchSize, false, progress); err != nil {
		return rep, err
	}

	// Pause: the exclusive pause lock waits for the live batch in flight
	// and holds off the next ones. Then bring everybody to one position.
	for _, p := range projs {
		l, err := db.Lock(ctx, LockPause, p.Name())
		if err != nil {
			return rep, fmt.Errorf("pause %s: %w", p.Name(), err)
		}
		defer func() { _ = l.Release(bg) }()
	}
	target := shadowAt
	live := map[string]eventstore.Position{}
	for _, p := range projs {
		cp, err := db.Checkpoint(ctx, p.Name())
		if err != nil {
			return rep, err
		}
		live[p.Name()] = cp.Position
		if target.Less(cp.Position) {
			target = cp.Position
		}
	}
	if _, err = replayShadow(ctx, feed, db, projs, shadowAt, &target, opts.BatchSize, false, progress); err != nil {
		return rep, err
	}
	for _, p := range projs {
		if err := advanceLive(ctx, feed, db, p, live[p.Name()], target); err != nil {
			return rep, fmt.Errorf("bring live %s to %s: %w", p.Name(), target, err)
		}
	}
	rep.Position = target

	rep.Tables, rep.Differences, err = db.Compare(ctx, tables, opts.MaxRowDifferences)
	if err != nil {
		return rep, fmt.Errorf("compare: %w", err)
	}
	if !opts.VerifyOnly {
		cps := map[string]eventstore.Position{}
		for _, p := range projs {
			cps[p.Name()] = target
		}
		if err := db.Swap(ctx, tables, cps); err != nil {
			return rep, fmt.Errorf("swap: %w", err)
		}
		swapped, rep.Swapped = true, true
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// replayShadow applies the feed after from (up to and including *upTo, if
// set) to the shadow tables of projs, one transaction per batch, and
// returns the position reached.
//
// Reading and decoding the next batch overlaps with writing the current
// one (one batch read ahead): the read is a query on another connection
// and the decoding is this process's CPU, while the write mostly waits on
// the database, so the two share the machine instead of taking turns.
func replayShadow(ctx context.Context, feed Feed, db ShadowDB, projs []Projection, from eventstore.Position, upTo *eventstore.Position, size int, bulk bool, progress func(int)) (eventstore.Position, error) {
	type read struct {
		envs []Envelope
		err  error
	}
	var wg sync.WaitGroup
	defer wg.Wait() // runs after cancel: the reader is gone before we return
	readCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	reads := make(chan read, 1)
	wg.Go(func() {
		defer close(reads)
		at := from
		for {
			evs, err := readUpTo(readCtx, feed, at, upTo, size)
			if err == nil && len(evs) == 0 {
				return
			}
			var r read
			if err != nil {
				r.err = err
			} else {
				r.envs, r.err = decode("rebuild", evs)
			}
			select {
			case reads <- r:
			case <-readCtx.Done():
				return
			}
			if r.err != nil {
				return
			}
			at = r.envs[len(r.envs)-1].Recorded.Position
		}
	})
	for r := range reads {
		if len(r.envs) > 0 {
			if err := applyShadow(ctx, db, projs, r.envs, bulk); err != nil {
				return from, err
			}
			from = r.envs[len(r.envs)-1].Recorded.Position
			progress(len(r.envs))
		}
		if r.err != nil {
			return from, r.err
		}
	}
	// The reader also stops when ctx ends, without a word: not the end of
	// the feed.
	return from, ctx.Err()
}

func applyShadow(ctx context.Context, db ShadowDB, projs []Projection, envs []Envelope, bulk bool) (err error) {
	b, err := db.BeginShadow(ctx, bulk)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = b.Rollback(context.WithoutCancel(ctx))
		}
	}()
	for _, p := range projs {
		if err := safeApply(ctx, p, b, envs); err != nil {
			return poisonAt(p.Name(), envs, err)
		}
	}
	return b.Commit(ctx, envs[len(envs)-1].Recorded.Position)
}

// advanceLive applies the feed from the live checkpoint up to target to a
// paused projection (its projector would have; it cannot while paused).
func advanceLive(ctx context.Context, feed Feed, db RuntimeDB, p Projection, from, target eventstore.Position) error {
	for from.Less(target) {
		evs, err := readUpTo(ctx, feed, from, &target, liveBatchSize)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return fmt.Errorf("feed ends at %s, before %s", from, target)
		}
		n, err := applyLive(ctx, db, p, from, evs, false)
		if err != nil {
			return err
		}
		from = evs[n-1].Position
	}
	return nil
}

// readUpTo reads the feed after from, cut at *upTo if set.
func readUpTo(ctx context.Context, feed Feed, from eventstore.Position, upTo *eventstore.Position, size int) ([]eventstore.RecordedEvent, error) {
	if upTo != nil && !from.Less(*upTo) {
		return nil, nil
	}
	evs, err := feed.ReadAll(ctx, from, size)
	if err != nil || upTo == nil {
		return evs, err
	}
	cut := len(evs)
	for i, e := range evs {
		if upTo.Less(e.Position) {
			cut = i
			break
		}
	}
	return evs[:cut], nil
}

// selectProjections picks projections by name, in all's order; no names
// means all.
func selectProjections(all []Projection, names []string) ([]Projection, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []Projection
	var known []string
	for _, p := range all {
		known = append(known, p.Name())
		if slices.Contains(names, p.Name()) {
			out = append(out, p)
		}
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown projection %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}
