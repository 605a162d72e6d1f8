package projections

import (
	"context"
	"fmt"
)

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

// compareOnline compares while the live projectors run (it is called
// paused, and resumes them): the live tables are read in a snapshot
// exported while they stood at the report's position, the shadows, which
// only this rebuild writes, as they are. The live projectors wait only for
// the short catch-up before. If every checksum matches (equal), the live
// tables equal history at that position and stay as they are, checkpoints
// included (the live projectors went on from there meanwhile), and the
// report is complete but for its duration. Otherwise the detailed
// comparison and the repair need the live tables to stand still: the
// caller pauses again.
func (r *rebuild) compareOnline(ctx context.Context, resume func()) (equal bool, err error) {
	snap, err := r.db.SnapshotLive(ctx)
	resume()
	if err != nil {
		return false, fmt.Errorf("snapshot the live tables: %w", err)
	}
	r.phase("paused catch-up")
	r.opts.hook(hookOnlineCompare)
	var comps []TableComparison
	err = r.db.FinishBulk(ctx, r.tables, balanceTotals(r.lanes))
	if err == nil {
		r.phase("balances")
		comps, err = r.db.Checksums(ctx, snap, r.tables)
	}
	_ = snap.Close(context.WithoutCancel(ctx))
	if err != nil {
		return false, fmt.Errorf("compare: %w", err)
	}
	r.phase("compare")
	if !equalTables(comps) {
		return false, nil
	}
	r.keep(comps)
	r.rep.Busy = r.stats.phases(r.lanes)
	return true, nil
}

// compare compares the complete shadows with the paused live tables, rows
// in the groups whose checksums differ, and reports every difference.
//
// The tables of projections that never started (r.unstarted: empty, and
// only behind) are not compared: their live side is empty and every
// difference the comparison would find is taken out of the report again
// (behindOnly). Their shadows are only counted, for the report and the
// swap's plan; the checksum scan of each shadow (every row hashed and
// grouped) and the ordered read of its first differing rows were most of
// a first rebuild's comparison.
func (r *rebuild) compare(ctx context.Context) error {
	var compared, behind []string
	for _, t := range r.tables {
		if r.unstarted[t] {
			behind = append(behind, t)
		} else {
			compared = append(compared, t)
		}
	}
	byTable := map[string]TableComparison{}
	if len(compared) > 0 {
		comps, diffs, err := r.compareTables(ctx, compared)
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		for _, c := range comps {
			byTable[c.Table] = c
		}
		r.rep.Differences = diffs
	}
	if len(behind) > 0 {
		counts, err := r.db.RowCounts(ctx, behind)
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		for _, c := range counts {
			byTable[c.Table] = TableComparison{Table: c.Table, LiveRows: c.LiveRows, RebuiltRows: c.RebuiltRows}
		}
	}
	r.rep.Tables = make([]TableComparison, 0, len(r.tables))
	for _, t := range r.tables {
		r.rep.Tables = append(r.rep.Tables, byTable[t])
	}
	r.behindOnly()
	r.phase("compare")
	return nil
}

// compareTables compares the paused live tables with their complete
// shadows: by checksums, then row by row in the groups that differ. When
// a checksum pass compared them at the position they stand at now (no
// event came after it: the live projectors wrote nothing since, and the
// stored replay rebuilt the shadows it did not store exactly as the pass
// hashed them), its checksums stand, and only the differing groups' rows
// are read: the checksum scan of every table and shadow again was most of
// the repair path's comparison.
func (r *rebuild) compareTables(ctx context.Context, tables []string) ([]TableComparison, []Difference, error) {
	cdb, ok := r.db.(ChecksumDB)
	if !ok || r.pass == nil || r.pass.at != r.rep.Position {
		return r.db.Compare(ctx, tables, r.opts.MaxRowDifferences)
	}
	byTable := map[string]TableComparison{}
	for _, c := range r.pass.comps {
		byTable[c.Table] = c
	}
	comps := make([]TableComparison, 0, len(tables))
	for _, t := range tables {
		c, ok := byTable[t]
		if !ok {
			return r.db.Compare(ctx, tables, r.opts.MaxRowDifferences)
		}
		comps = append(comps, c)
	}
	return cdb.DetailGroups(ctx, comps, r.opts.MaxRowDifferences)
}

// keep reports comps, every table equal to history: the live tables stay
// as they are (unless VerifyOnly, that is the swap's outcome).
func (r *rebuild) keep(comps []TableComparison) {
	r.rep.Tables = comps
	if !r.opts.VerifyOnly {
		for i := range r.rep.Tables {
			r.rep.Tables[i].Repair = RepairNone
		}
		r.rep.Swapped = true
	}
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
