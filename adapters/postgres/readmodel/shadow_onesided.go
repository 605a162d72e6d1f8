package readmodel

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/projections"
)

// oneSided tells whether a table's comparison can skip the row join: one
// side has no rows at all (the first rebuild into empty live tables, a new
// projection, a restored database; or history that lost a table's rows),
// so every row of the other side differs, missing from the empty one.
func oneSided(c projections.TableComparison) bool {
	return (c.LiveRows == 0) != (c.RebuiltRows == 0)
}

// compareOneSided is compareRows for a table whose live table or shadow is
// empty: every row of the other side is a difference, counted by the
// checksums already, and the first limit of them, in the order
// compareRows reports them (by key text), are read from that side alone.
// The FULL JOIN it replaces ordered and formatted every row of the table
// (most of a first rebuild's time).
func compareOneSided(ctx context.Context, tx pgx.Tx, table string, c projections.TableComparison, limit int) (int64, []projections.Difference, error) {
	spec := tableSpecs[table]
	name, kind, total := table+shadowSuffix, projections.DiffMissingInLive, c.RebuiltRows
	if c.RebuiltRows == 0 {
		name, kind, total = table, projections.DiffMissingInRebuilt, c.LiveRows
	}
	var keyText, obj []string
	for _, k := range spec.key {
		keyText = append(keyText, quoted(k)+"::text")
	}
	for _, col := range spec.compare {
		obj = append(obj, "'"+col+"', "+quoted(col))
	}
	// The key text is formatted for every row (the order), the row's JSON
	// only for those reported.
	sql := fmt.Sprintf(`SELECT diff_key_, jsonb_build_object(%[2]s)::text
		FROM (SELECT concat_ws('/', %[1]s) AS diff_key_, * FROM %[3]s ORDER BY 1 LIMIT $1) r ORDER BY diff_key_`,
		strings.Join(keyText, ", "), strings.Join(obj, ", "), quoted(name))
	rows, err := tx.Query(ctx, sql, limit)
	if err != nil {
		return 0, nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (projections.Difference, error) {
		d := projections.Difference{Table: table, Kind: kind}
		side := &d.Rebuilt
		if kind == projections.DiffMissingInRebuilt {
			side = &d.Live
		}
		return d, r.Scan(&d.Key, side)
	})
	return total, out, err
}

// differingRows counts and details the differing rows of a table whose
// checksums differ: from one side alone when the other is empty, else by
// joining both in the differing groups.
func differingRows(ctx context.Context, tx pgx.Tx, c projections.TableComparison, limit int) (int64, []projections.Difference, error) {
	if oneSided(c) {
		return compareOneSided(ctx, tx, c.Table, c, limit)
	}
	return compareRows(ctx, tx, c.Table, c.DifferingGroups, limit)
}
