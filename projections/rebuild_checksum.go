package projections

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// checksumFirst runs the checksum pass where it can tell something: a
// healthy ledger needs no stored replay. The live tables are aligned at
// the head under a short pause, a snapshot of them is exported there, and
// the live projectors go on; the live tables' checksums are read in that
// snapshot while the feed is replayed up to the same position, the ledger
// entries (nearly all of the rows) hashed as they are booked instead of
// stored (EntrySums; the smaller tables are loaded into their shadows and
// scanned). If every checksum matches, the live tables equal history at
// that position and stay as they are, checkpoints included (healthy).
// Otherwise (or when the pass cannot tell) it readies the stored replay,
// which compares, reports and repairs row by row (checked). Not for
// --swap-all, nor when the live tables are empty (a first rebuild: they
// differ, and the pass would be spent).
func (r *rebuild) checksumFirst(ctx context.Context) (healthy, checked bool, err error) {
	cdb, ok := r.db.(ChecksumDB)
	if !ok || r.opts.SwapAll {
		return false, false, nil
	}
	fresh, err := liveTablesEmpty(ctx, r.feed, r.db, r.tables)
	if err != nil || fresh {
		return false, false, err
	}
	healthy, kept, err := r.checksumPass(ctx, cdb)
	if err != nil || healthy {
		return healthy, false, err
	}
	// The stored replay, the rate counted on its events.
	r.rep.Events, r.rep.Tables = 0, nil
	if kept != nil {
		// The pass stored every shadow but the ledger's, complete at its
		// position: only the ledger is replayed from the start, up to
		// there; all go on together from there.
		if r.lanes, err = r.ledgerFromStart(ctx, kept, r.rep.Position); err != nil {
			return false, true, err
		}
		r.shadowAt = r.rep.Position
		return false, true, nil
	}
	// Start over: fresh shadows, fresh lanes.
	if err := r.db.PrepareShadow(ctx, r.tables); err != nil {
		return false, true, fmt.Errorf("prepare shadow tables: %w", err)
	}
	r.shadowAt = eventstore.Start
	return false, true, nil
}

// checksumPass compares the live tables with history by checksums
// without storing the ledger entries (see checksumFirst). It reports
// whether every table matched (then the report is complete but for its
// duration) and, when they did not, the lanes whose shadows it stored
// complete (nil: none to keep).
func (r *rebuild) checksumPass(ctx context.Context, cdb ChecksumDB) (healthy bool, kept []*lane, err error) {
	snap, err := r.snapshotAtHead(ctx)
	if err != nil {
		return false, nil, err
	}
	// The live tables' scans run beside the replay.
	live := liveChecksums(ctx, cdb, snap, r.tables)
	r.opts.hook(hookOnlineCompare)

	lanes := lanesOf(r.projs, true)
	if err := r.replayTo(ctx, lanes, r.rep.Position); err != nil {
		_, _ = live()
		if errors.Is(err, errChecksumPassUnfit) {
			return false, nil, nil // the stored replay will tell
		}
		return false, nil, err
	}
	r.phase(PhaseChecksumReplay)
	entries, totals, ok := ledgerSums(lanes)
	if !ok {
		// A balance left int64: the database adds them up from stored
		// entries.
		_, _ = live()
		return false, others(lanes), nil
	}
	shadow, err := r.shadowChecksums(ctx, cdb, entries, totals)
	if err != nil {
		_, _ = live()
		return false, nil, err
	}
	liveSums, err := live()
	if err != nil {
		return false, nil, fmt.Errorf("compare: %w", err)
	}
	var comps []TableComparison
	for _, t := range r.tables {
		comps = append(comps, CompareSums(t, liveSums[t], shadow[t]))
	}
	r.phase("compare")
	if !equalTables(comps) {
		r.pass = &passResult{at: r.rep.Position, comps: comps}
		return false, others(lanes), nil
	}
	r.rep.Busy = r.stats.phases(lanes)
	r.keep(comps)
	return true, nil, nil
}

// snapshotAtHead pauses the live projectors, brings them to the head of
// the feed, exports a snapshot of their tables there and lets them go on.
// The report's position is the snapshot's.
func (r *rebuild) snapshotAtHead(ctx context.Context) (LiveSnapshot, error) {
	head, err := r.feed.Head(ctx)
	if err != nil {
		return nil, err
	}
	resume, err := r.pause(ctx)
	if err != nil {
		return nil, err
	}
	target, err := r.alignLive(ctx, head, nil)
	var snap LiveSnapshot
	if err == nil {
		snap, err = r.db.SnapshotLive(ctx)
	}
	resume()
	if err != nil {
		return nil, err
	}
	r.phase("paused alignment")
	r.rep.Position = target
	return snap, nil
}

// liveChecksums starts reading the live tables' checksums in snap (closed
// when done); the returned function waits for them.
func liveChecksums(ctx context.Context, cdb ChecksumDB, snap LiveSnapshot, tables []string) func() (map[string]TableSums, error) {
	type result struct {
		sums map[string]TableSums
		err  error
	}
	done := make(chan result, 1)
	go func() {
		sums, err := cdb.LiveChecksums(ctx, snap, tables)
		_ = snap.Close(context.WithoutCancel(ctx))
		done <- result{sums, err}
	}()
	return func() (map[string]TableSums, error) {
		res := <-done
		return res.sums, res.err
	}
}

// ledgerSums returns what the ledger's lane of a checksum pass added up:
// its entries' checksums and the balances (entries nil: no ledger lane).
// ok is false when a balance left int64.
func ledgerSums(lanes []*lane) (entries TableSums, totals []BalanceTotal, ok bool) {
	for _, l := range lanes {
		if l.sums != nil {
			entries = l.sums
			if totals = l.totals.balances(); totals == nil {
				return nil, nil, false
			}
		}
	}
	return entries, totals, true
}

// shadowChecksums completes the stored shadows (balances from totals) and
// returns their checksums, the ledger entries' being entries when the pass
// hashed them (they were not stored).
func (r *rebuild) shadowChecksums(ctx context.Context, cdb ChecksumDB, entries TableSums, totals []BalanceTotal) (map[string]TableSums, error) {
	if err := r.db.FinishBulk(ctx, r.tables, totals); err != nil {
		return nil, fmt.Errorf("finish bulk load: %w", err)
	}
	var scanned []string
	for _, t := range r.tables {
		if t != "ledger_entries" || entries == nil {
			scanned = append(scanned, t)
		}
	}
	shadow, err := cdb.ShadowChecksums(ctx, scanned)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if entries != nil {
		shadow["ledger_entries"] = entries
	}
	return shadow, nil
}

// ledgerFromStart replays the ledger projection alone, into fresh shadows
// of its tables, from the start of the feed up to at, and returns its lanes
// with kept (the other lanes, whose shadows are at at already).
func (r *rebuild) ledgerFromStart(ctx context.Context, kept []*lane, at eventstore.Position) ([]*lane, error) {
	var ledger []Projection
	var tables []string
	for _, p := range r.projs {
		if _, ok := p.(ledgerProjection); ok {
			ledger = append(ledger, p)
			tables = append(tables, p.Tables()...)
		}
	}
	if len(ledger) == 0 {
		return kept, nil
	}
	if err := r.db.PrepareShadow(ctx, tables); err != nil {
		return nil, fmt.Errorf("prepare shadow tables: %w", err)
	}
	lanes := lanesOf(ledger, false)
	from := eventstore.Start
	if err := retryShort(ctx, func() (bool, error) {
		var err error
		from, err = replayShadow(ctx, r.feed, r.db, lanes, &r.stats, from, &at, r.opts.BatchSize, r.progress)
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
