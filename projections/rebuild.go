package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/money"
)

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

// SwapPlan says how a swap brings each live table to its rebuilt content;
// a table in neither field equals it already.
type SwapPlan struct {
	// Replace: the shadow, indexed, takes the live table's place.
	Replace []string
	// Patch: the live table is repaired in place, in the named checksum
	// groups (TableComparison.DifferingGroups).
	Patch map[string][]string
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
)

func (o RebuildOptions) hook(phase string) {
	if o.phaseHook != nil {
		o.phaseHook(phase)
	}
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
	// DifferingGroups name the checksum groups (for ledger entries:
	// account/currency/day) whose rows differ.
	DifferingGroups []string
	// Repair is what the swap did to the live table: RepairNone,
	// RepairPatched or RepairReplaced (empty: not swapped).
	Repair string
}

// Repairs a swap makes to a live table.
const (
	RepairNone     = "unchanged" // equal to history: kept as it is
	RepairPatched  = "patched"   // the differing rows repaired in place
	RepairReplaced = "replaced"  // the rebuilt table took its place
)

// replaceShare: a table with more than this share of differing rows is
// replaced rather than repaired row by row (building its indexes at once
// is cheaper than maintaining them row by row from there on).
const replaceShare = 10 // percent

// replaces tells whether a table with differing rows out of c's is
// replaced rather than repaired in place.
func replaces(differing int64, c TableComparison) bool {
	return differing*100 > replaceShare*max(c.LiveRows, c.RebuiltRows)
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
	phaseStart := time.Now()
	phase := func(name string) {
		now := time.Now()
		rep.Phases = append(rep.Phases, Phase{Name: name, Duration: now.Sub(phaseStart)})
		phaseStart = now
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
	// The shadows go in the end whatever happened: a replaced table's
	// shadow is the live table by then, the others are spent.
	defer func() { _ = db.DropShadow(bg, tables) }()

	progress := func(n int) {
		rep.Events += int64(n)
		if opts.Progress != nil {
			opts.Progress(rep.Events, -1)
		}
	}
	var stats replayStats
	shadowAt := eventstore.Start

	// Pause: the exclusive pause locks wait for the live batch in flight
	// and hold off the next ones.
	pause := func() (resume func(), err error) {
		var locks []Lock
		resume = func() {
			for _, l := range locks {
				_ = l.Release(bg)
			}
			locks = nil
		}
		for _, p := range projs {
			l, err := db.Lock(ctx, LockPause, p.Name())
			if err != nil {
				resume()
				return nil, fmt.Errorf("pause %s: %w", p.Name(), err)
			}
			locks = append(locks, l)
		}
		return resume, nil
	}
	// alignLive brings the paused live projections to one position, the
	// furthest of floor and their checkpoints, and returns it.
	alignLive := func(floor eventstore.Position, shadow func(target eventstore.Position) error) (eventstore.Position, error) {
		target := floor
		live := map[string]eventstore.Position{}
		for _, p := range projs {
			cp, err := db.Checkpoint(ctx, p.Name())
			if err != nil {
				return target, err
			}
			live[p.Name()] = cp.Position
			if target.Less(cp.Position) {
				target = cp.Position
			}
		}
		if shadow != nil {
			if err := shadow(target); err != nil {
				return target, err
			}
		}
		for _, p := range projs {
			if err := advanceLive(ctx, feed, db, p, live[p.Name()], target); err != nil {
				return target, fmt.Errorf("bring live %s to %s: %w", p.Name(), target, err)
			}
		}
		return target, nil
	}
	// replayTo brings the shadows of lanes to target (the feed may hold
	// back for a moment a position it showed).
	replayTo := func(lanes []*lane, target eventstore.Position) error {
		if err := retryShort(ctx, func() (bool, error) {
			var err error
			shadowAt, err = replayShadow(ctx, feed, db, lanes, &stats, shadowAt, &target, opts.BatchSize, progress)
			return !shadowAt.Less(target), err
		}); err != nil {
			return fmt.Errorf("bring the shadow to %s: %w", target, err)
		}
		return nil
	}

	// The checksum pass: a healthy ledger needs no stored replay. The
	// live tables are aligned at the head under a short pause, a snapshot
	// of them is exported there, and the live projectors go on; the live
	// tables' checksums are read in that snapshot while the feed is
	// replayed up to the same position, the ledger entries (nearly all of
	// the rows) hashed as they are booked instead of stored (EntrySums;
	// the smaller tables are loaded into their shadows and scanned). If
	// every checksum matches, the live tables equal history at that
	// position and stay as they are, checkpoints included. Otherwise (or
	// when the pass cannot tell) the rebuild starts over below, replaying
	// into the shadow tables, and compares, reports and repairs row by
	// row. Not for --swap-all, nor when the live tables are empty (a first
	// rebuild: they differ, and the pass would be spent).
	checked := false
	var lanes []*lane // the stored replay's (nil: all fresh)
	if cdb, ok := db.(ChecksumDB); ok && !opts.SwapAll {
		fresh, err := liveTablesEmpty(ctx, feed, db, tables)
		if err != nil {
			return rep, err
		}
		if !fresh {
			healthy, kept, err := checksumPass(ctx, feed, db, cdb, projs, tables, opts, &rep, checksumSteps{
				pause: pause, alignLive: alignLive, replayTo: replayTo, phase: phase, stats: &stats,
			})
			if err != nil {
				return rep, err
			}
			if healthy {
				rep.Duration = time.Since(start)
				return rep, nil
			}
			checked = true
			// The stored replay, the rate counted on its events.
			rep.Events, rep.Tables = 0, nil
			if kept != nil {
				// The pass stored every shadow but the ledger's, complete
				// at its position: only the ledger is replayed from the
				// start, up to there; all go on together from there.
				if lanes, err = ledgerFromStart(ctx, feed, db, projs, kept, rep.Position, &stats, opts.BatchSize, progress); err != nil {
					return rep, err
				}
				shadowAt = rep.Position
			} else {
				// Start over: fresh shadows, fresh lanes.
				if err := db.PrepareShadow(ctx, tables); err != nil {
					return rep, fmt.Errorf("prepare shadow tables: %w", err)
				}
				shadowAt = eventstore.Start
			}
		}
	}

	// Bulk load, then catch up with the feed while the live projectors
	// still run, so that the pause below is short.
	if lanes == nil {
		lanes = lanesOf(projs, false)
	}
	shadowAt, err = replayShadow(ctx, feed, db, lanes, &stats, shadowAt, nil, opts.BatchSize, progress)
	if err != nil {
		return rep, err
	}
	phase(PhaseReplay)

	// A table whose shadow has many more rows (the first rebuild, into
	// empty tables) will be replaced: its shadow's indexes are built now,
	// while the live projectors run, rather than during the pause. Rows are
	// counted only where the tables' sizes on disk (from the catalog) leave
	// room for it: counting every table cost a scan of each, over a second
	// for 1M events. A shadow no bigger than its live table cannot have
	// many more rows than it unless the live table is bloated, and then the
	// guess is only wrong: the comparison has the last word, and a table
	// it finds different beyond the guess gets its indexes then. (Derived
	// tables are still empty here: FinishBulk fills them.)
	indexed := map[string]bool{}
	if !opts.VerifyOnly {
		sizes, err := db.TableSizes(ctx, tables)
		if err != nil {
			return rep, err
		}
		var bigger []string
		for _, c := range sizes {
			if opts.SwapAll || replaces(c.Shadow-c.Live, TableComparison{LiveRows: c.Live, RebuiltRows: c.Shadow}) {
				bigger = append(bigger, c.Table)
			}
		}
		early := bigger
		if !opts.SwapAll && len(bigger) > 0 {
			counts, err := db.RowCounts(ctx, bigger)
			if err != nil {
				return rep, err
			}
			early = nil
			for _, c := range counts {
				if replaces(c.RebuiltRows-c.LiveRows, c) {
					early = append(early, c.Table)
				}
			}
		}
		for _, t := range early {
			indexed[t] = true
		}
		if len(early) > 0 {
			if err := db.IndexShadow(ctx, early); err != nil {
				return rep, fmt.Errorf("index shadow tables: %w", err)
			}
			phase("indexes")
		}
	}
	// The replay took a while: catch up with the feed while the live
	// projectors still run, so that the pause below is short.
	if shadowAt, err = replayShadow(ctx, feed, db, lanes, &stats, shadowAt, nil, opts.BatchSize, progress); err != nil {
		return rep, err
	}
	phase("catch-up")

	// Pause, then bring the shadows and the live tables to one position
	// (both are close to the head by now: a few batches at most).
	align := func() (eventstore.Position, error) {
		return alignLive(shadowAt, func(target eventstore.Position) error { return replayTo(lanes, target) })
	}
	resume, err := pause()
	if err != nil {
		return rep, err
	}
	defer func() { resume() }()
	target, err := align()
	if err != nil {
		return rep, err
	}
	rep.Position = target

	// A rebuild that expects no table to be replaced compares while the
	// live projectors run: the live tables are read in a snapshot exported
	// while they stood at target (the pause ends right after it), the
	// shadows, which only this rebuild writes, as they are. The live
	// projectors wait only for the short catch-up above. If every
	// checksum matches, the live tables equal history at target and stay
	// as they are, checkpoints included (the live projectors went on from
	// there meanwhile). Otherwise the detailed comparison and the repair
	// need the live tables to stand still: pause again, as below. (After
	// a checksum pass that found differences, this would only find them
	// again.)
	if !opts.SwapAll && len(indexed) == 0 && !checked {
		snap, err := db.SnapshotLive(ctx)
		resume()
		if err != nil {
			return rep, fmt.Errorf("snapshot the live tables: %w", err)
		}
		phase("paused catch-up")
		opts.hook(hookOnlineCompare)
		var comps []TableComparison
		err = db.FinishBulk(ctx, tables, balanceTotals(lanes))
		if err == nil {
			phase("balances")
			comps, err = db.Checksums(ctx, snap, tables)
		}
		_ = snap.Close(bg)
		if err != nil {
			return rep, fmt.Errorf("compare: %w", err)
		}
		phase("compare")
		if equalTables(comps) {
			rep.Tables = comps
			if !opts.VerifyOnly {
				for i := range rep.Tables {
					rep.Tables[i].Repair = RepairNone
				}
				rep.Swapped = true
			}
			rep.Busy = stats.phases(lanes)
			rep.Duration = time.Since(start)
			return rep, nil
		}
		if resume, err = pause(); err != nil {
			return rep, err
		}
		if target, err = align(); err != nil {
			return rep, err
		}
		rep.Position = target
	}
	phase("paused catch-up")
	rep.Busy = stats.phases(lanes)
	if err := db.FinishBulk(ctx, tables, balanceTotals(lanes)); err != nil {
		return rep, fmt.Errorf("finish bulk load: %w", err)
	}
	phase("balances")

	rep.Tables, rep.Differences, err = db.Compare(ctx, tables, opts.MaxRowDifferences)
	if err != nil {
		return rep, fmt.Errorf("compare: %w", err)
	}
	phase("compare")
	if !opts.VerifyOnly {
		plan := SwapPlan{Patch: map[string][]string{}}
		for i, c := range rep.Tables {
			switch {
			case opts.SwapAll || replaces(c.DifferingRows, c):
				plan.Replace = append(plan.Replace, c.Table)
				rep.Tables[i].Repair = RepairReplaced
			case c.DifferingRows > 0 || len(c.DifferingGroups) > 0:
				plan.Patch[c.Table] = c.DifferingGroups
				rep.Tables[i].Repair = RepairPatched
			default:
				rep.Tables[i].Repair = RepairNone
			}
		}
		var late []string
		for _, t := range plan.Replace {
			if !indexed[t] {
				late = append(late, t)
			}
		}
		if len(late) > 0 {
			if err := db.IndexShadow(ctx, late); err != nil {
				return rep, fmt.Errorf("index shadow tables: %w", err)
			}
			phase("indexes (paused)")
		}
		cps := map[string]eventstore.Position{}
		for _, p := range projs {
			cps[p.Name()] = target
		}
		if err := db.Swap(ctx, plan, cps); err != nil {
			return rep, fmt.Errorf("swap: %w", err)
		}
		rep.Swapped = true
		phase("swap")
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// checksumSteps are the parts of Rebuild a checksum pass shares.
type checksumSteps struct {
	pause     func() (func(), error)
	alignLive func(floor eventstore.Position, shadow func(eventstore.Position) error) (eventstore.Position, error)
	replayTo  func(lanes []*lane, target eventstore.Position) error
	phase     func(name string)
	stats     *replayStats
}

// checksumPass compares the live tables with history by checksums
// without storing the ledger entries (see Rebuild). It reports whether
// every table matched; then rep is complete but for its duration.
func checksumPass(ctx context.Context, feed Feed, db ShadowDB, cdb ChecksumDB, projs []Projection, tables []string,
	opts RebuildOptions, rep *Report, s checksumSteps) (healthy bool, kept []*lane, err error) {
	bg := context.WithoutCancel(ctx)
	head, err := feed.Head(ctx)
	if err != nil {
		return false, nil, err
	}
	resume, err := s.pause()
	if err != nil {
		return false, nil, err
	}
	target, err := s.alignLive(head, nil)
	var snap LiveSnapshot
	if err == nil {
		snap, err = db.SnapshotLive(ctx)
	}
	resume()
	if err != nil {
		return false, nil, err
	}
	s.phase("paused alignment")
	rep.Position = target
	// The live tables' scans run beside the replay.
	type result struct {
		sums map[string]TableSums
		err  error
	}
	liveDone := make(chan result, 1)
	go func() {
		sums, err := cdb.LiveChecksums(ctx, snap, tables)
		_ = snap.Close(bg)
		liveDone <- result{sums, err}
	}()
	live := func() (map[string]TableSums, error) {
		r := <-liveDone
		return r.sums, r.err
	}
	opts.hook(hookOnlineCompare)

	lanes := lanesOf(projs, true)
	if err := s.replayTo(lanes, target); err != nil {
		_, _ = live()
		if errors.Is(err, errChecksumPassUnfit) {
			return false, nil, nil // the stored replay will tell
		}
		return false, nil, err
	}
	s.phase(PhaseChecksumReplay)
	var entries TableSums
	var totals []BalanceTotal
	for _, l := range lanes {
		if l.sums != nil {
			entries = l.sums
			totals = l.totals.balances()
			if totals == nil {
				// A balance left int64: the database adds them up from
				// stored entries.
				_, _ = live()
				return false, others(lanes), nil
			}
		}
	}
	if err := db.FinishBulk(ctx, tables, totals); err != nil {
		_, _ = live()
		return false, nil, fmt.Errorf("finish bulk load: %w", err)
	}
	var scanned []string
	for _, t := range tables {
		if t != "ledger_entries" || entries == nil {
			scanned = append(scanned, t)
		}
	}
	shadow, err := cdb.ShadowChecksums(ctx, scanned)
	if err != nil {
		_, _ = live()
		return false, nil, fmt.Errorf("compare: %w", err)
	}
	if entries != nil {
		shadow["ledger_entries"] = entries
	}
	liveSums, err := live()
	if err != nil {
		return false, nil, fmt.Errorf("compare: %w", err)
	}
	var comps []TableComparison
	for _, t := range tables {
		comps = append(comps, CompareSums(t, liveSums[t], shadow[t]))
	}
	s.phase("compare")
	if !equalTables(comps) {
		return false, others(lanes), nil
	}
	rep.Busy = s.stats.phases(lanes)
	rep.Tables = comps
	if !opts.VerifyOnly {
		for i := range rep.Tables {
			rep.Tables[i].Repair = RepairNone
		}
		rep.Swapped = true
	}
	return true, nil, nil
}

// ledgerFromStart replays the ledger projection alone, into fresh shadows
// of its tables, from the start of the feed up to at, and returns its lanes
// with kept (the other lanes, whose shadows are at at already).
func ledgerFromStart(ctx context.Context, feed Feed, db ShadowDB, projs []Projection, kept []*lane, at eventstore.Position,
	stats *replayStats, size int, progress func(int)) ([]*lane, error) {
	var ledger []Projection
	var tables []string
	for _, p := range projs {
		if _, ok := p.(ledgerProjection); ok {
			ledger = append(ledger, p)
			tables = append(tables, p.Tables()...)
		}
	}
	if len(ledger) == 0 {
		return kept, nil
	}
	if err := db.PrepareShadow(ctx, tables); err != nil {
		return nil, fmt.Errorf("prepare shadow tables: %w", err)
	}
	lanes := lanesOf(ledger, false)
	from := eventstore.Start
	if err := retryShort(ctx, func() (bool, error) {
		var err error
		from, err = replayShadow(ctx, feed, db, lanes, stats, from, &at, size, progress)
		return !from.Less(at), err
	}); err != nil {
		return nil, fmt.Errorf("bring the ledger's shadow to %s: %w", at, err)
	}
	return append(lanes, kept...), nil
}

// others are the lanes of a checksum pass other than the ledger's: their
// shadows are stored, complete at the pass's position.
func others(lanes []*lane) []*lane {
	var out []*lane
	for _, l := range lanes {
		if l.sums == nil {
			out = append(out, l)
		}
	}
	return out
}

// liveTablesEmpty: the feed has events and the live tables have no rows
// on disk (from the catalog: no scan).
func liveTablesEmpty(ctx context.Context, feed Feed, db ShadowDB, tables []string) (bool, error) {
	head, err := feed.Head(ctx)
	if err != nil || head == eventstore.Start {
		return false, err
	}
	sizes, err := db.TableSizes(ctx, tables)
	if err != nil {
		return false, err
	}
	for _, c := range sizes {
		if c.Live > 0 {
			return false, nil
		}
	}
	return true, nil
}

// phases are the busy times of the replay pipeline: reading the feed,
// decoding, each lane's writes.
func (s *replayStats) phases(lanes []*lane) []Phase {
	out := []Phase{{Name: "read", Duration: s.read}, {Name: "decode", Duration: s.decode}}
	for _, l := range lanes {
		out = append(out, Phase{Name: "write " + l.name(), Duration: l.busy})
	}
	return out
}

// balanceTotals returns the balances the ledger's lane added up, nil if
// none did (or they overflowed).
func balanceTotals(lanes []*lane) []BalanceTotal {
	for _, l := range lanes {
		if l.totals != nil {
			return l.totals.balances()
		}
	}
	return nil
}

// equalTables: every table's checksums match.
func equalTables(comps []TableComparison) bool {
	for _, c := range comps {
		if c.LiveRows != c.RebuiltRows || len(c.DifferingGroups) > 0 {
			return false
		}
	}
	return true
}

// lane is one writer of a replay: a projection, or one stream partition of
// a stream-local projection. Each lane applies the batches in feed order in
// its own transactions; lanes run side by side.
type lane struct {
	proj        Projection
	part, parts int
	hold        *paymentHold // the payments projection's lanes: rows held in memory
	copies      bool         // the ledger's lane: entries loaded by an entryCopier
	copier      *entryCopier // while a replay runs
	totals      *entryTotals // the ledger's lane: its entries added up, across replays
	// sums: the ledger's lane in a checksum pass: its entries' checksums
	// (not stored), across replays; periods: their sums per period, for
	// the closes.
	sums    TableSums
	periods *periodTotals
	busy    time.Duration
}

func (l *lane) name() string {
	if l.parts == 1 {
		return l.proj.Name()
	}
	return fmt.Sprintf("%s/%d", l.proj.Name(), l.part)
}

// streamLocal is implemented by projections whose every row depends on
// the events of one stream only, in stream order: a rebuild may replay them
// partitioned by stream (the ledger is not: its period booking depends on
// the global order of the calendar events).
type streamLocal interface {
	// partitions is how many lanes a rebuild gives the projection.
	partitions() int
}

// lanesOf returns the lanes of a rebuild; they keep state (held rows)
// from one replay to the next. In a checksum pass the ledger's lane hashes
// its entries instead of loading them.
func lanesOf(projs []Projection, checksums bool) []*lane {
	var out []*lane
	for _, p := range projs {
		n := 1
		if s, ok := p.(streamLocal); ok {
			n = max(1, s.partitions())
		}
		for i := range n {
			l := &lane{proj: p, part: i, parts: n}
			switch p.(type) {
			case paymentsProjection:
				l.hold = newPaymentHold()
			case ledgerProjection:
				l.copies = true
				l.totals = newEntryTotals()
				if checksums {
					l.sums = TableSums{}
					l.periods = newPeriodTotals()
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// events returns the lane's share of a batch.
func (l *lane) events(envs []Envelope) []Envelope {
	if l.parts == 1 {
		return envs
	}
	out := make([]Envelope, 0, len(envs)/l.parts+len(envs)/8)
	for _, e := range envs {
		if int(streamHash(e.Recorded.StreamID)%uint32(l.parts)) == l.part {
			out = append(out, e)
		}
	}
	return out
}

// streamHash is FNV-1a of s, inline: hash/fnv allocates a hasher and a
// copy of s, per event and lane.
func streamHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// replayBatch is one batch of the feed on its way through the lanes.
type replayBatch struct {
	seq  int
	envs []Envelope
	left atomic.Int32 // lanes still applying it
}

// replayShadow applies the feed after from (up to and including *upTo, if
// set) to the shadow tables of projs, and returns the position reached.
//
// It is a pipeline: one goroutine reads batches (a query on the event
// store's connection), another decodes them (on two cores when there are),
// and each lane writes its share on its own read-model connection, so that
// the database's work and this process's overlap. A batch counts as
// replayed once every lane has committed it.
// replayStats accumulates the busy times of a rebuild's reader and decoder.
type replayStats struct{ read, decode time.Duration }

func replayShadow(ctx context.Context, feed Feed, db ShadowDB, lanes []*lane, stats *replayStats, from eventstore.Position, upTo *eventstore.Position, size int, progress func(int)) (eventstore.Position, error) {
	g, gctx := errgroup.WithContext(ctx)
	raw := make(chan []eventstore.RecordedEvent, 1)
	g.Go(func() error {
		defer close(raw)
		for at := from; ; {
			t := time.Now()
			evs, err := readUpTo(gctx, dataOnly(feed), at, upTo, size)
			stats.read += time.Since(t)
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				return nil
			}
			select {
			case raw <- evs:
			case <-gctx.Done():
				return gctx.Err()
			}
			at = evs[len(evs)-1].Position
		}
	})
	laneIn := make([]chan *replayBatch, len(lanes))
	for i := range laneIn {
		laneIn[i] = make(chan *replayBatch, 2)
	}
	g.Go(func() error {
		defer func() {
			for _, c := range laneIn {
				close(c)
			}
		}()
		seq := 0
		for evs := range raw {
			t := time.Now()
			envs, err := decodeParallel(evs)
			stats.decode += time.Since(t)
			if len(envs) > 0 {
				b := &replayBatch{seq: seq, envs: envs}
				seq++
				b.left.Store(int32(len(lanes)))
				for _, c := range laneIn {
					select {
					case c <- b:
					case <-gctx.Done():
						return gctx.Err()
					}
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	done := make(chan *replayBatch, 2*len(lanes))
	for i, l := range lanes {
		g.Go(func() (err error) {
			if l.copies {
				l.copier = startEntryCopier(gctx, db, l.totals, l.sums, l.periods)
				defer func() {
					if cerr := l.copier.stop(l.sums); err == nil {
						err = cerr
					}
					l.copier = nil
				}()
			}
			for b := range laneIn[i] {
				t := time.Now()
				err := l.apply(gctx, db, b.envs)
				l.busy += time.Since(t)
				if err != nil {
					return err
				}
				if b.left.Add(-1) == 0 {
					select {
					case done <- b:
					case <-gctx.Done():
						return gctx.Err()
					}
				}
			}
			// What the lane still holds goes in before the replay ends.
			return l.release(gctx, db)
		})
	}
	errc := make(chan error, 1)
	go func() {
		errc <- g.Wait()
		close(done)
	}()
	// Batches complete in order but may be reported out of it: count them
	// in sequence.
	finished := map[int]*replayBatch{}
	next := 0
	for b := range done {
		finished[b.seq] = b
		for b, ok := finished[next]; ok; b, ok = finished[next] {
			delete(finished, next)
			next++
			from = b.envs[len(b.envs)-1].Recorded.Position
			progress(len(b.envs))
		}
	}
	if err := <-errc; err != nil {
		return from, err
	}
	// The reader also stops when ctx ends, without a word: not the end of
	// the feed.
	return from, ctx.Err()
}

// decodeParallel decodes a batch in two halves at once; like decode, it
// returns the envelopes before the first undecodable event and its error.
func decodeParallel(evs []eventstore.RecordedEvent) ([]Envelope, error) {
	if len(evs) < 64 {
		return decode("rebuild", evs)
	}
	half := len(evs) / 2
	var second []Envelope
	var secondErr error
	var wg sync.WaitGroup
	wg.Go(func() { second, secondErr = decode("rebuild", evs[half:]) })
	first, err := decode("rebuild", evs[:half])
	wg.Wait()
	if err != nil {
		return first, err
	}
	return append(first, second...), secondErr
}

// apply writes the lane's share of a batch in one transaction.
func (l *lane) apply(ctx context.Context, db ShadowDB, envs []Envelope) (err error) {
	envs = l.events(envs)
	if len(envs) == 0 {
		return nil
	}
	b, err := db.BeginShadow(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = b.Rollback(context.WithoutCancel(ctx))
		}
	}()
	var w Writer = b
	switch {
	case l.hold != nil:
		w = holdingWriter{Batch: b, h: l.hold}
	case l.copier != nil:
		w = copyingWriter{Batch: b, c: l.copier}
	}
	if err := safeApply(ctx, l.proj, w, envs); err != nil {
		return poisonAt(l.proj.Name(), envs, err)
	}
	if l.hold != nil {
		l.hold.batch++
		if err := l.hold.release(ctx, b, false); err != nil {
			return err
		}
	}
	return b.Commit(ctx, envs[len(envs)-1].Recorded.Position)
}

// release writes every row the lane holds, in one transaction.
func (l *lane) release(ctx context.Context, db ShadowDB) (err error) {
	if l.hold == nil || len(l.hold.rows) == 0 {
		return nil
	}
	b, err := db.BeginShadow(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = b.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := l.hold.release(ctx, b, true); err != nil {
		return err
	}
	return b.Commit(ctx, eventstore.Position{})
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
			// The feed showed target before; it may hold back for a moment
			// (a read-model transaction that ends while the horizon is
			// computed errs low), never for good.
			if err := retryShort(ctx, func() (bool, error) {
				evs, err = readUpTo(ctx, feed, from, &target, liveBatchSize)
				return len(evs) > 0, err
			}); err != nil {
				return fmt.Errorf("feed ends at %s, before %s: %w", from, target, err)
			}
		}
		n, err := applyLive(ctx, db, p, from, evs, false)
		if err != nil {
			return err
		}
		from = evs[n-1].Position
	}
	return nil
}

// errFeedHeldBack: the feed did not show again what it had shown.
var errFeedHeldBack = errors.New("the feed stayed behind a position it showed before")

// retryShort runs f until it reports done, for about a second at most: the
// feed horizon errs low for a moment when a transaction it would pass ends
// while it is computed, so a read may briefly end before a position an
// earlier read showed.
func retryShort(ctx context.Context, f func() (bool, error)) error {
	for range 50 {
		done, err := f()
		if err != nil || done {
			return err
		}
		if !sleep(ctx, 20*time.Millisecond) {
			return ctx.Err()
		}
	}
	return errFeedHeldBack
}

// dataFeed is a Feed that can leave the events' metadata out of a read
// (adapters/postgres EventStore): a replay uses none of it, and it is
// nearly half of the JSON the database formats for the read.
type dataFeed interface {
	ReadAllData(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error)
}

// dataOnlyFeed reads a dataFeed without the metadata.
type dataOnlyFeed struct {
	Feed
	d dataFeed
}

func (f dataOnlyFeed) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	return f.d.ReadAllData(ctx, after, limit)
}

// dataOnly is feed reading without the events' metadata if it can.
func dataOnly(feed Feed) Feed {
	if d, ok := feed.(dataFeed); ok {
		return dataOnlyFeed{Feed: feed, d: d}
	}
	return feed
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
