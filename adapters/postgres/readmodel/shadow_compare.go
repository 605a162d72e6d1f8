package readmodel

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/projections"
)

// Compare compares each shadow table with its live table, in two steps.
// First a checksum per group of rows (for ledger entries: per account,
// currency and day), on both sides: the row count and the XOR of a 64-bit
// hash of each row's key and compared columns (hash_record_extended, so
// no text is formatted). Rows are unique by key on both sides, so equal
// checksums mean equal rows, up to a 2^-64 chance per group. Then rows are
// compared one by one only in the groups whose checksums differ: a healthy
// ledger costs two hashed scans of each table and no join.
func (s *Store) Compare(ctx context.Context, tables []string, maxRows int) ([]projections.TableComparison, []projections.Difference, error) {
	if err := checkTables(tables); err != nil {
		return nil, nil, err
	}
	sums, err := s.checksums(ctx, tables, "")
	if err != nil {
		return nil, nil, err
	}
	comps := make([]projections.TableComparison, len(tables))
	for i, t := range tables {
		comps[i] = projections.CompareSums(t, sums[2*i], sums[2*i+1])
	}
	return s.DetailGroups(ctx, comps, maxRows)
}

// DetailGroups is Compare's second step on the comparisons by checksums
// comps (CompareSums): the rows of each table's differing groups compared
// one by one, every difference counted and the first maxRows of each
// table detailed. A rebuild whose checksum pass compared the tables at the
// position they still stand at needs no second checksum scan of each.
func (s *Store) DetailGroups(ctx context.Context, comps []projections.TableComparison, maxRows int) ([]projections.TableComparison, []projections.Difference, error) {
	tables := make([]string, len(comps))
	for i, c := range comps {
		tables[i] = c.Table
	}
	if err := checkTables(tables); err != nil {
		return nil, nil, err
	}
	out := make([]projections.TableComparison, 0, len(comps))
	var diffs []projections.Difference
	// One snapshot for the row comparisons.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		for _, c := range comps {
			t := c.Table
			if c.LiveRows != c.RebuiltRows {
				diffs = append(diffs, projections.Difference{Table: t, Kind: projections.DiffRowCount,
					Live: fmt.Sprint(c.LiveRows), Rebuilt: fmt.Sprint(c.RebuiltRows)})
			}
			if len(c.DifferingGroups) > 0 {
				if t == "ledger_entries" {
					ds, err := compareSums(ctx, tx, maxRows)
					if err != nil {
						return err
					}
					diffs = append(diffs, ds...)
				}
				n, ds, err := differingRows(ctx, tx, c, maxRows)
				if err != nil {
					return err
				}
				c.DifferingRows = n
				diffs = append(diffs, ds...)
			}
			out = append(out, c)
		}
		return nil
	})
	return out, diffs, err
}

// compareSums compares the entries' sums per account and currency.
func compareSums(ctx context.Context, tx pgx.Tx, limit int) ([]projections.Difference, error) {
	rows, err := tx.Query(ctx, `
		WITH l AS (SELECT account, currency, sum(amount) AS total FROM ledger_entries GROUP BY 1, 2),
		     s AS (SELECT account, currency, sum(amount) AS total FROM ledger_entries_shadow GROUP BY 1, 2)
		SELECT coalesce(l.account, s.account) || '/' || coalesce(l.currency, s.currency),
		       coalesce(l.total::text, ''), coalesce(s.total::text, '')
		FROM l FULL JOIN s ON l.account = s.account AND l.currency = s.currency
		WHERE l.total IS DISTINCT FROM s.total
		ORDER BY 1 LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (projections.Difference, error) {
		d := projections.Difference{Table: "ledger_entries", Kind: projections.DiffSum}
		return d, r.Scan(&d.Key, &d.Live, &d.Rebuilt)
	})
}

// compareRows finds the rows of the given groups present on one side only
// or with different data; it returns how many, and the first limit of
// them.
func compareRows(ctx context.Context, tx pgx.Tx, table string, groups []string, limit int) (int64, []projections.Difference, error) {
	spec := tableSpecs[table]
	var on, keyText, lCols, sCols, lObj, sObj []string
	for _, k := range spec.key {
		q := quoted(k)
		on = append(on, "l."+q+" = s."+q)
		keyText = append(keyText, "coalesce(l."+q+", s."+q+")::text")
	}
	for _, c := range spec.compare {
		q := quoted(c)
		lCols, sCols = append(lCols, "l."+q), append(sCols, "s."+q)
		lObj, sObj = append(lObj, "'"+c+"', l."+q), append(sObj, "'"+c+"', s."+q)
	}
	k0 := quoted(spec.key[0])
	sql := fmt.Sprintf(`
		SELECT concat_ws('/', %[3]s),
		       CASE WHEN l.%[4]s IS NULL THEN $2 WHEN s.%[4]s IS NULL THEN $3 ELSE $4 END,
		       CASE WHEN l.%[4]s IS NULL THEN '' ELSE jsonb_build_object(%[7]s)::text END,
		       CASE WHEN s.%[4]s IS NULL THEN '' ELSE jsonb_build_object(%[8]s)::text END,
		       count(*) OVER ()
		FROM (SELECT * FROM %[1]s WHERE %[10]s = ANY($5)) l
		FULL JOIN (SELECT * FROM %[2]s WHERE %[10]s = ANY($5)) s ON %[9]s
		WHERE l.%[4]s IS NULL OR s.%[4]s IS NULL OR ROW(%[5]s) IS DISTINCT FROM ROW(%[6]s)
		ORDER BY 1 LIMIT $1`,
		quoted(table), quoted(table+shadowSuffix), strings.Join(keyText, ", "), k0,
		strings.Join(lCols, ", "), strings.Join(sCols, ", "), strings.Join(lObj, ", "), strings.Join(sObj, ", "),
		strings.Join(on, " AND "), groupKey(spec))
	rows, err := tx.Query(ctx, sql, limit, projections.DiffMissingInLive, projections.DiffMissingInRebuilt, projections.DiffRow, groups)
	if err != nil {
		return 0, nil, err
	}
	var total int64
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (projections.Difference, error) {
		d := projections.Difference{Table: table}
		err := r.Scan(&d.Key, &d.Kind, &d.Live, &d.Rebuilt, &total)
		return d, err
	})
	return total, out, err
}

// RowCounts counts each live table's rows and its shadow's.
func (s *Store) RowCounts(ctx context.Context, tables []string) ([]projections.TableComparison, error) {
	if err := checkTables(tables); err != nil {
		return nil, err
	}
	out := make([]projections.TableComparison, len(tables))
	for i, t := range tables {
		out[i].Table = t
		if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+quoted(t)+`), (SELECT count(*) FROM `+
			quoted(t+shadowSuffix)+`)`).Scan(&out[i].LiveRows, &out[i].RebuiltRows); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TableSizes returns the size of each live table's heap and of its
// shadow's, from the catalog (no scan).
func (s *Store) TableSizes(ctx context.Context, tables []string) ([]projections.TableSize, error) {
	if err := checkTables(tables); err != nil {
		return nil, err
	}
	out := make([]projections.TableSize, len(tables))
	for i, t := range tables {
		out[i].Table = t
		if err := s.pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass), pg_relation_size($2::regclass)`,
			quoted(t), quoted(t+shadowSuffix)).Scan(&out[i].Live, &out[i].Shadow); err != nil {
			return nil, err
		}
	}
	return out, nil
}
