package projections

import (
	"context"
	"fmt"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// SwapPlan says how a swap brings each live table to its rebuilt content;
// a table in neither field equals it already.
type SwapPlan struct {
	// Replace: the shadow, indexed, takes the live table's place.
	Replace []string
	// Patch: the live table is repaired in place, in the named checksum
	// groups (TableComparison.DifferingGroups).
	Patch map[string][]string
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

// indexEarly builds, while the live projectors run, the indexes of the
// shadows that will replace their live tables (those with many more rows,
// as in the first rebuild into empty tables), rather than during the
// pause, and returns the tables it indexed. Rows are counted only where
// the tables' sizes on disk (from the catalog) leave room for it: counting
// every table cost a scan of each, over a second for 1M events. A shadow
// no bigger than its live table cannot have many more rows than it unless
// the live table is bloated, and then the guess is only wrong: the
// comparison has the last word, and a table it finds different beyond the
// guess gets its indexes then (swap). (Derived tables are still empty
// here: FinishBulk fills them.)
func (r *rebuild) indexEarly(ctx context.Context) (indexed map[string]bool, err error) {
	indexed = map[string]bool{}
	if r.opts.VerifyOnly {
		return indexed, nil
	}
	early, err := r.likelyReplaced(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range early {
		indexed[t] = true
	}
	if len(early) > 0 {
		r.opts.hook(hookIndexes)
		if err := r.db.IndexShadow(ctx, early); err != nil {
			return nil, fmt.Errorf("index shadow tables: %w", err)
		}
		r.phase("indexes")
	}
	return indexed, nil
}

// likelyReplaced are the tables whose shadows have many more rows than
// the live tables (all of them for SwapAll), judged by size, then by count.
func (r *rebuild) likelyReplaced(ctx context.Context) ([]string, error) {
	sizes, err := r.db.TableSizes(ctx, r.tables)
	if err != nil {
		return nil, err
	}
	var bigger, out []string
	for _, c := range sizes {
		switch {
		case r.opts.SwapAll:
			out = append(out, c.Table)
		case c.Live == 0 && c.Shadow > 0:
			// An empty live table (no page on disk) differs in every row
			// of a shadow that has one: no count needed (it cost a scan of
			// each shadow, the ledger's the longest).
			out = append(out, c.Table)
		case replaces(c.Shadow-c.Live, TableComparison{LiveRows: c.Live, RebuiltRows: c.Shadow}):
			bigger = append(bigger, c.Table)
		}
	}
	if len(bigger) == 0 {
		return out, nil
	}
	counts, err := r.db.RowCounts(ctx, bigger)
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		if replaces(c.RebuiltRows-c.LiveRows, c) {
			out = append(out, c.Table)
		}
	}
	return out, nil
}

// swap brings the paused live tables to the shadows' content, as the
// comparison found them, in one short transaction: a table equal to
// history is kept, one with few differing rows repaired in place, any
// other replaced by its shadow, indexed first unless indexed already. The
// checkpoints go to the report's position.
func (r *rebuild) swap(ctx context.Context, indexed map[string]bool) error {
	plan := r.plan()
	var late []string
	for _, t := range plan.Replace {
		if !indexed[t] {
			late = append(late, t)
		}
	}
	if len(late) > 0 {
		if err := r.db.IndexShadow(ctx, late); err != nil {
			return fmt.Errorf("index shadow tables: %w", err)
		}
		r.phase("indexes (paused)")
	}
	cps := map[string]eventstore.Position{}
	for _, p := range r.projs {
		cps[p.Name()] = r.rep.Position
	}
	if err := r.db.Swap(ctx, plan, cps); err != nil {
		return fmt.Errorf("swap: %w", err)
	}
	r.rep.Swapped = true
	r.phase("swap")
	return nil
}

// plan decides each table's repair from the comparison, and reports it.
func (r *rebuild) plan() SwapPlan {
	plan := SwapPlan{Patch: map[string][]string{}}
	for i, c := range r.rep.Tables {
		switch {
		case r.opts.SwapAll || replaces(c.DifferingRows, c) || (r.unstarted[c.Table] && c.RebuiltRows > 0):
			plan.Replace = append(plan.Replace, c.Table)
			r.rep.Tables[i].Repair = RepairReplaced
		case c.DifferingRows > 0 || len(c.DifferingGroups) > 0:
			plan.Patch[c.Table] = c.DifferingGroups
			r.rep.Tables[i].Repair = RepairPatched
		default:
			r.rep.Tables[i].Repair = RepairNone
		}
	}
	return plan
}
