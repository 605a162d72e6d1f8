package projections

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/money"
)

// A rebuild's steps live in files of their own:
//
//   - rebuild.go: the orchestration (Rebuild), its options and report, and
//     what it needs from the read-model database (ShadowDB);
//   - rebuild_checksum.go: the checksum pass, which settles a healthy
//     ledger without storing its entries;
//   - rebuild_replay.go: the replay pipeline, which reads and decodes the
//     feed and hands each batch to the lanes, in feed order;
//   - rebuild_write.go: the lanes, which write their share of each batch
//     into the shadow tables (the replay's write side);
//   - rebuild_live.go: pausing the live projectors and bringing them and
//     the shadows to one position;
//   - rebuild_compare.go: comparing shadows and live tables, and the
//     outcome types;
//   - rebuild_swap.go: indexing the shadows and bringing the live tables to
//     their content.

// ShadowDB is what a rebuild needs from the read-model database besides the
// runtime's part: shadow copies of the read-model tables (<table>_shadow).
type ShadowDB interface {
	RuntimeDB
	// BeginShadow starts a batch writing to the shadow tables, in bulk: the
	// shadow has no secondary indexes, entries are appended without
	// conflict checks (the feed holds each event once) and derived tables
	// (balances) are left to FinishBulk. Batches of different projections,
	// and of different streams of a stream-local projection, may run at
	// once.
	BeginShadow(ctx context.Context) (Batch, error)
	// PrepareShadow (re)creates empty shadow tables shaped like the live
	// ones, without their secondary indexes.
	PrepareShadow(ctx context.Context, tables []string) error
	// FinishBulk computes derived tables from the loaded ones, once, after
	// the last batch: the balances are totals when the rebuild added them
	// up itself (nil: from the loaded entries).
	FinishBulk(ctx context.Context, tables []string, totals []BalanceTotal) error
	// IndexShadow builds the live tables' keys and indexes on the shadows
	// of tables, before they replace the live ones.
	IndexShadow(ctx context.Context, tables []string) error
	// RowCounts counts the rows of each live table and of its shadow
	// (LiveRows and RebuiltRows).
	RowCounts(ctx context.Context, tables []string) ([]TableComparison, error)
	// TableSizes returns the size of each live table and of its shadow, as
	// the catalog has them (no scan).
	TableSizes(ctx context.Context, tables []string) ([]TableSize, error)
	// Compare compares shadow and live tables: per-group checksums, then
	// rows in the groups that differ (at most maxRows differences of each
	// table are detailed).
	Compare(ctx context.Context, tables []string, maxRows int) ([]TableComparison, []Difference, error)
	// Swap brings the live tables to their shadows' content in one
	// transaction, as plan says (grants and dependent views carried over),
	// and sets the checkpoints.
	Swap(ctx context.Context, plan SwapPlan, checkpoints map[string]eventstore.Position) error
	// SnapshotLive exports a snapshot of the read model as it is now (a
	// read-only transaction kept open until Close), for Checksums.
	SnapshotLive(ctx context.Context) (LiveSnapshot, error)
	// Checksums compares shadow and live tables by per-group checksums
	// only: the live tables as snap saw them, the shadows as they are now.
	// The live projectors may run meanwhile.
	Checksums(ctx context.Context, snap LiveSnapshot, tables []string) ([]TableComparison, error)
	DropShadow(ctx context.Context, tables []string) error
	LockHeld(ctx context.Context, kind LockKind, name string) (bool, error)
}

// TableSize is the size on disk (bytes) of a live table and of its shadow.
type TableSize struct {
	Table        string
	Live, Shadow int64
}

// BalanceTotal is one account_balances row as a rebuild adds it up from
// the entries it loads.
type BalanceTotal struct {
	Account  string
	Currency money.Currency
	Balance  int64
	Entries  int64
}

// LiveSnapshot is an exported snapshot of the read model (see
// ShadowDB.SnapshotLive).
type LiveSnapshot interface {
	Close(ctx context.Context) error
}

// RebuildOptions tune Rebuild.
type RebuildOptions struct {
	// VerifyOnly compares and reports, and leaves the live tables alone.
	VerifyOnly bool
	// SwapAll replaces every live table by its shadow, even those equal to
	// history (by default an equal table is kept, and one with few
	// differing rows is repaired in place).
	SwapAll bool
	// Progress, if set, is called after each batch with the events
	// replayed so far and the total (-1: unknown, the feed cannot count).
	Progress func(done, total int64)
	// BatchSize of the bulk load; default 5000.
	BatchSize int
	// MaxRowDifferences detailed per table; default 20.
	MaxRowDifferences int
	// phaseHook, if set, is called as the rebuild enters some phases
	// (tests block it there; see export_test.go).
	phaseHook func(phase string)
}

// Names of some Report.Phases.
const (
	// PhaseChecksumReplay: the checksum pass's replay, which stores no
	// ledger entries; a healthy ledger's rebuild has no other replay.
	PhaseChecksumReplay = "replay (checksums)"
	// PhaseReplay: the replay into the shadow tables, which the repair
	// and the swap need.
	PhaseReplay = "replay"
)

// Phases passed to RebuildOptions.phaseHook.
const (
	// hookOnlineCompare: the live projectors run again, the shadows are at
	// the position of the exported snapshot, the comparison is about to
	// start.
	hookOnlineCompare = "online compare"
	// hookIndexes: the shadows that will replace their live tables are
	// loaded, their indexes about to be built (while the live projectors
	// run).
	hookIndexes = "indexes"
)

func (o RebuildOptions) hook(phase string) {
	if o.phaseHook != nil {
		o.phaseHook(phase)
	}
}

// Phase is how long one step of a rebuild took.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Report is the outcome of a rebuild. A non-empty Differences means the
// live tables did not match history (the CLI exits non-zero); unless
// VerifyOnly, the live tables were brought to the rebuilt content anyway.
type Report struct {
	Projections []string
	Position    eventstore.Position // where the compared (and swapped-in) tables are
	Events      int64               // events replayed
	Tables      []TableComparison
	Differences []Difference
	Swapped     bool
	Duration    time.Duration
	Phases      []Phase
	// Busy is how long each stage of the replay pipeline worked (reading
	// the feed, decoding, each lane's writes), all replays together: the
	// stage closest to the replay's duration is the one the others wait
	// for.
	Busy []Phase
}

// Rebuild compares the live tables of the named projections (all when
// names is empty) with what history says, and brings them to it.
//
// First a checksum pass (when db is a ChecksumDB, and neither SwapAll nor
// a first rebuild into empty live tables): the live projectors pause for a
// moment to meet at the head, a snapshot of the live tables is exported
// there, and while their per-group checksums are read in it the feed is
// replayed up to the same position, the ledger entries hashed as they are
// booked instead of stored (EntrySums), the other tables loaded into
// shadows. A healthy ledger ends there: its live tables equal history and
// stay as they are, checkpoints included.
//
// Otherwise the shadows are completed by a stored replay at bulk speed
// (the projections in parallel, stream-local ones partitioned by stream;
// COPY; no secondary indexes; after a checksum pass only the ledger's,
// from the start), which catches up with the live projectors; they pause
// for as long as it takes to bring shadows and live tables to one position
// (the last few batches); then (or, without a checksum pass, first by
// checksums while the live projectors run again, in a snapshot) rows are
// compared in the groups that differ, every difference reported, and
// (unless VerifyOnly) the live tables brought to the rebuilt content in one
// short transaction: a table equal to history is kept, one with few
// differing rows repaired in place, any other replaced by its shadow,
// indexed first. Live queries keep answering throughout.
func Rebuild(ctx context.Context, feed Feed, db ShadowDB, all []Projection, names []string, opts RebuildOptions) (Report, error) {
	r, err := newRebuild(feed, db, all, names, opts)
	if err != nil {
		return Report{}, err
	}
	// Cleanup must run even when ctx was canceled.
	bg := context.WithoutCancel(ctx)
	unlock, err := r.lock(ctx)
	defer unlock(bg)
	if err != nil {
		return r.rep, err
	}
	if err := r.markRebuilding(ctx); err != nil {
		return r.rep, err
	}
	defer r.restoreStatus(bg)
	if err := db.PrepareShadow(ctx, r.tables); err != nil {
		return r.rep, fmt.Errorf("prepare shadow tables: %w", err)
	}
	// The shadows go in the end whatever happened: a replaced table's
	// shadow is the live table by then, the others are spent.
	defer func() { _ = db.DropShadow(bg, r.tables) }()

	healthy, checked, err := r.checksumFirst(ctx)
	if err != nil {
		return r.rep, err
	}
	if healthy {
		return r.done(), nil
	}
	if err := r.bulkLoad(ctx); err != nil {
		return r.rep, err
	}
	indexed, err := r.indexEarly(ctx)
	if err != nil {
		return r.rep, err
	}
	if err := r.catchUp(ctx); err != nil {
		return r.rep, err
	}

	// Pause, then bring the shadows and the live tables to one position
	// (both are close to the head by now: a few batches at most).
	resume, err := r.pause(ctx)
	if err != nil {
		return r.rep, err
	}
	defer func() { resume() }()
	if err := r.alignShadows(ctx); err != nil {
		return r.rep, err
	}
	// After a checksum pass that found differences, an online comparison
	// would only find them again; with a table to replace, it would be
	// spent.
	if !opts.SwapAll && len(indexed) == 0 && !checked {
		equal, err := r.compareOnline(ctx, resume)
		if err != nil {
			return r.rep, err
		}
		if equal {
			return r.done(), nil
		}
		if resume, err = r.pause(ctx); err != nil {
			return r.rep, err
		}
		if err := r.alignShadows(ctx); err != nil {
			return r.rep, err
		}
	}
	r.phase("paused catch-up")
	r.rep.Busy = r.stats.phases(r.lanes)
	if err := r.finishBulk(ctx); err != nil {
		return r.rep, err
	}
	if err := r.compare(ctx); err != nil {
		return r.rep, err
	}
	if !opts.VerifyOnly {
		if err := r.swap(ctx, indexed); err != nil {
			return r.rep, err
		}
	}
	return r.done(), nil
}

// rebuild is one run of Rebuild: what its steps share.
type rebuild struct {
	feed   Feed
	db     ShadowDB
	projs  []Projection
	tables []string // the projections' tables, in their order
	opts   RebuildOptions

	rep        Report
	start      time.Time
	phaseStart time.Time // of the phase under way

	stats    replayStats
	lanes    []*lane             // the stored replay's (nil: none yet)
	shadowAt eventstore.Position // where the replay left the shadows
	// unstarted: the tables of the projections the last alignment left at
	// the start of the feed, empty (emptyLive).
	unstarted map[string]bool
	// pass: what the checksum pass found, when it found differences (nil:
	// no pass, or it could not tell).
	pass *passResult
}

// passResult is a checksum pass's comparison of the live tables with
// history at one position.
type passResult struct {
	at    eventstore.Position
	comps []TableComparison
}

// newRebuild selects the projections and fills in the options' defaults.
func newRebuild(feed Feed, db ShadowDB, all []Projection, names []string, opts RebuildOptions) (*rebuild, error) {
	start := time.Now()
	projs, err := selectProjections(all, names)
	if err != nil {
		return nil, err
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 5000
	}
	if opts.MaxRowDifferences <= 0 {
		opts.MaxRowDifferences = 20
	}
	r := &rebuild{feed: feed, db: db, projs: projs, opts: opts, start: start, shadowAt: eventstore.Start}
	for _, p := range projs {
		r.rep.Projections = append(r.rep.Projections, p.Name())
		r.tables = append(r.tables, p.Tables()...)
	}
	r.phaseStart = time.Now()
	return r, nil
}

// phase ends the phase under way, under name.
func (r *rebuild) phase(name string) {
	now := time.Now()
	r.rep.Phases = append(r.rep.Phases, Phase{Name: name, Duration: now.Sub(r.phaseStart)})
	r.phaseStart = now
}

// progress counts n more events replayed.
func (r *rebuild) progress(n int) {
	r.rep.Events += int64(n)
	if r.opts.Progress != nil {
		r.opts.Progress(r.rep.Events, -1)
	}
}

// done completes the report with the rebuild's duration.
func (r *rebuild) done() Report {
	r.rep.Duration = time.Since(r.start)
	return r.rep
}

// lock takes every projection's rebuild lock; unlock releases those it
// took (also when it failed).
func (r *rebuild) lock(ctx context.Context) (unlock func(context.Context), err error) {
	var locks []Lock
	unlock = func(bg context.Context) {
		for _, l := range slices.Backward(locks) {
			_ = l.Release(bg)
		}
	}
	for _, p := range r.projs {
		l, ok, err := r.db.TryLock(ctx, LockRebuild, p.Name())
		if err != nil {
			return unlock, err
		}
		if !ok {
			return unlock, fmt.Errorf("a rebuild of %s is already running", p.Name())
		}
		locks = append(locks, l)
	}
	return unlock, nil
}

// markRebuilding gives every projection a checkpoint and the status
// rebuilding.
func (r *rebuild) markRebuilding(ctx context.Context) error {
	if err := r.db.EnsureCheckpoints(ctx, r.rep.Projections); err != nil {
		return err
	}
	for _, p := range r.projs {
		if err := r.db.SetStatus(ctx, p.Name(), StatusRebuilding); err != nil {
			return err
		}
	}
	return nil
}

// restoreStatus sets the status back to what the live projector does:
// live if one holds its lock now.
func (r *rebuild) restoreStatus(bg context.Context) {
	for _, p := range r.projs {
		st := StatusStopped
		if held, err := r.db.LockHeld(bg, LockActive, p.Name()); err == nil && held {
			st = StatusLive
		}
		_ = r.db.SetStatus(bg, p.Name(), st)
	}
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
