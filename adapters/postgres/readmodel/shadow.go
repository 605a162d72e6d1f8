package readmodel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections"
)

// tableSpec says how a rebuild treats a read-model table: which columns
// identify a row, which hold data to compare (ids from sequences and
// updated_at wall-clock stamps legitimately differ), and whether the
// shadow needs its unique constraints during the load (tables written with
// ON CONFLICT upserts do; ledger_entries is COPYed and account_balances
// computed at the end).
type tableSpec struct {
	key, compare []string
	eagerKeys    bool
}

var tableSpecs = map[string]tableSpec{
	"ledger_entries": {
		key: []string{"event_id", "posting_index"},
		compare: []string{"stream_id", "event_type", "provider", "account", "currency", "amount",
			"occurred_at", "recorded_at", "position_commit", "position_prepare",
			"period", "late_adjustment", "adjusts_period"},
	},
	// The calendar's rows come from the periods stream's events (their
	// times are the events' own), so a rebuild reproduces them exactly;
	// both tables are written with upserts.
	"periods": {
		key: []string{"period"},
		compare: []string{"status", "books_start", "zone", "closed_at", "closed_by", "close_note", "close_event_id",
			"reopened_at", "reopened_by", "reopen_reason", "reopen_event_id", "content_hash"},
		eagerKeys: true,
	},
	"period_balances": {
		key:       []string{"period", "account", "currency"},
		compare:   []string{"opening", "debits", "credits", "closing", "content_hash"},
		eagerKeys: true,
	},
	"account_balances": {
		key:     []string{"account", "currency"},
		compare: []string{"balance", "entry_count"},
	},
	"payments": {
		key: []string{"provider", "payment_id"},
		compare: []string{"stream_id", "status", "currency", "authorized_amount", "captured_amount", "fee_amount",
			"refunded_amount", "refund_pending_amount", "dispute_open_amount", "dispute_lost_amount",
			"failed", "canceled", "version", "updated_at"},
		eagerKeys: true,
	},
	"reconciliation_items": {
		key: []string{"stream_id", "kind", "item_key"},
		compare: []string{"status", "provider", "payment_id", "details", "opened_at", "resolved_at",
			"opened_event_id", "resolved_event_id", "resolved_by", "note"},
		eagerKeys: true,
	},
	"settlement_lines": {
		key: []string{"provider", "line_key"},
		compare: []string{"kind", "source_type", "line_id", "payment_id", "capture_id", "refund_id", "dispute_id",
			"gross", "fee", "net", "currency", "original_amount", "original_currency", "exchange_rate", "payout_id",
			"occurred_at", "available_on", "stream_id"},
		eagerKeys: true,
	},
	"payouts": {
		key: []string{"provider", "payout_id"},
		compare: []string{"amount", "currency", "arrival_date", "paid", "failed", "status", "line_count",
			"lines_net", "difference"},
		eagerKeys: true,
	},
}

// shadowIndexSuffix marks index and constraint names on shadow tables
// (names are unique per schema); Swap renames them to the live names.
const shadowIndexSuffix = "_sh"

func checkTables(tables []string) error {
	for _, t := range tables {
		if _, ok := tableSpecs[t]; !ok {
			return fmt.Errorf("readmodel: %q is not a read-model table", t)
		}
	}
	return nil
}

// PrepareShadow recreates empty shadow tables.
func (s *Store) PrepareShadow(ctx context.Context, tables []string) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, t := range tables {
			sh := quoted(t + shadowSuffix)
			// LIKE copies columns, defaults (ledger_entries.id keeps drawing
			// from the live sequence), NOT NULL and CHECK constraints, but no
			// indexes: those are built after the load.
			if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+sh); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE `+sh+` (LIKE `+quoted(t)+
				` INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE)`); err != nil {
				return err
			}
			if tableSpecs[t].eagerKeys {
				if err := copyConstraints(ctx, tx, t); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// FinishBulk computes the balances from the loaded entries, builds the
// indexes and refreshes the planner's statistics.
func (s *Store) FinishBulk(ctx context.Context, tables []string) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if slices.Contains(tables, "account_balances") && slices.Contains(tables, "ledger_entries") {
			if _, err := tx.Exec(ctx, `
				INSERT INTO account_balances_shadow (account, currency, balance, entry_count, updated_at)
				SELECT account, currency, sum(amount)::bigint, count(*), now()
				FROM ledger_entries_shadow GROUP BY account, currency`); err != nil {
				return err
			}
		}
		for _, t := range tables {
			if err := copyConstraints(ctx, tx, t); err != nil {
				return err
			}
			if err := copyIndexes(ctx, tx, t); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `ANALYZE `+quoted(t+shadowSuffix)); err != nil {
				return err
			}
		}
		return nil
	})
}

// copyConstraints adds the live table's primary key, unique and exclusion
// constraints to its shadow, unless there already.
func copyConstraints(ctx context.Context, tx pgx.Tx, table string) error {
	rows, err := tx.Query(ctx, `
		SELECT c.conname, pg_get_constraintdef(c.oid)
		FROM pg_constraint c
		WHERE c.conrelid = $1::regclass AND c.contype IN ('p', 'u', 'x')
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint s
		                  WHERE s.conrelid = $2::regclass AND s.conname = c.conname || $3)
		ORDER BY c.contype, c.conname`, quoted(table), quoted(table+shadowSuffix), shadowIndexSuffix)
	if err != nil {
		return err
	}
	defs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Name, Def string }])
	if err != nil {
		return err
	}
	for _, d := range defs {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+quoted(table+shadowSuffix)+` ADD CONSTRAINT `+
			quoted(d.Name+shadowIndexSuffix)+` `+d.Def); err != nil {
			return err
		}
	}
	return nil
}

// copyIndexes creates the live table's plain indexes (those not backing a
// constraint) on its shadow.
func copyIndexes(ctx context.Context, tx pgx.Tx, table string) error {
	rows, err := tx.Query(ctx, `
		SELECT i.relname, x.indisunique, pg_get_indexdef(x.indexrelid)
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
		WHERE x.indrelid = $1::regclass
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid)
		ORDER BY i.relname`, quoted(table))
	if err != nil {
		return err
	}
	defs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Name   string
		Unique bool
		Def    string
	}])
	if err != nil {
		return err
	}
	for _, d := range defs {
		// "CREATE INDEX name ON public.table USING btree (...)": keep the
		// part from USING on, which names only columns.
		at := strings.Index(d.Def, " USING ")
		if at < 0 {
			return fmt.Errorf("readmodel: unexpected definition of index %s: %s", d.Name, d.Def)
		}
		unique := ""
		if d.Unique {
			unique = "UNIQUE "
		}
		if _, err := tx.Exec(ctx, `CREATE `+unique+`INDEX `+quoted(d.Name+shadowIndexSuffix)+` ON `+
			quoted(table+shadowSuffix)+d.Def[at:]); err != nil {
			return err
		}
	}
	return nil
}

// DropShadow drops the shadow tables.
func (s *Store) DropShadow(ctx context.Context, tables []string) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := s.pool.Exec(ctx, `DROP TABLE IF EXISTS `+quoted(t+shadowSuffix)); err != nil {
			return err
		}
	}
	return nil
}

// Compare compares each shadow table with its live table.
func (s *Store) Compare(ctx context.Context, tables []string, maxRows int) ([]projections.TableComparison, []projections.Difference, error) {
	if err := checkTables(tables); err != nil {
		return nil, nil, err
	}
	var comps []projections.TableComparison
	var diffs []projections.Difference
	// One snapshot for all the queries.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		for _, t := range tables {
			c := projections.TableComparison{Table: t}
			if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+quoted(t)+`), (SELECT count(*) FROM `+
				quoted(t+shadowSuffix)+`)`).Scan(&c.LiveRows, &c.RebuiltRows); err != nil {
				return err
			}
			if c.LiveRows != c.RebuiltRows {
				diffs = append(diffs, projections.Difference{Table: t, Kind: projections.DiffRowCount,
					Live: fmt.Sprint(c.LiveRows), Rebuilt: fmt.Sprint(c.RebuiltRows)})
			}
			if t == "ledger_entries" {
				ds, err := compareSums(ctx, tx, maxRows)
				if err != nil {
					return err
				}
				diffs = append(diffs, ds...)
			}
			n, ds, err := compareRows(ctx, tx, t, maxRows)
			if err != nil {
				return err
			}
			c.DifferingRows = n
			diffs = append(diffs, ds...)
			comps = append(comps, c)
		}
		return nil
	})
	return comps, diffs, err
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

// compareRows finds rows present on one side only or with different data;
// it returns how many, and the first limit of them.
func compareRows(ctx context.Context, tx pgx.Tx, table string, limit int) (int64, []projections.Difference, error) {
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
		FROM %[1]s l FULL JOIN %[2]s s ON %[9]s
		WHERE l.%[4]s IS NULL OR s.%[4]s IS NULL OR ROW(%[5]s) IS DISTINCT FROM ROW(%[6]s)
		ORDER BY 1 LIMIT $1`,
		quoted(table), quoted(table+shadowSuffix), strings.Join(keyText, ", "), k0,
		strings.Join(lCols, ", "), strings.Join(sCols, ", "), strings.Join(lObj, ", "), strings.Join(sObj, ", "),
		strings.Join(on, " AND "))
	rows, err := tx.Query(ctx, sql, limit, projections.DiffMissingInLive, projections.DiffMissingInRebuilt, projections.DiffRow)
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

// The swap needs an exclusive lock on each live table and view, which a
// running accountant query holds off. Rather than queue every new query
// behind a waiting swap (or deadlock with a query that reads two of the
// tables in another order), it waits briefly, gives up, and tries again.
// The wait must stay below Postgres' deadlock_timeout (1s by default) so
// that in a lock cycle it is the swap that yields, never the query.
const (
	swapLockTimeout = "250ms"
	swapBudget      = 2 * time.Minute
)

// Swap replaces the live tables by their shadows, in one transaction.
func (s *Store) Swap(ctx context.Context, tables []string, checkpoints map[string]eventstore.Position) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	deadline := time.Now().Add(swapBudget)
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return swap(ctx, tx, tables, checkpoints) })
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != pgerrcode.LockNotAvailable && pgErr.Code != pgerrcode.DeadlockDetected) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("tables stayed busy for %s (%d attempts): %w", swapBudget, attempt, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(20+rand.IntN(100)) * time.Millisecond):
		}
	}
}

func swap(ctx context.Context, tx pgx.Tx, tables []string, checkpoints map[string]eventstore.Position) error {
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+swapLockTimeout+`'`); err != nil {
		return err
	}
	// Before the rename: the views' text and the tables' grants, which
	// still name the live tables.
	type view struct{ Name, Def string }
	rows, err := tx.Query(ctx, `
		SELECT DISTINCT v.oid::regclass::text, pg_get_viewdef(v.oid)
		FROM pg_depend d
		JOIN pg_rewrite r ON r.oid = d.objid
		JOIN pg_class v ON v.oid = r.ev_class
		WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
		  AND d.refobjid = ANY($1::regclass[]) AND v.oid <> d.refobjid`, quotedAll(tables))
	if err != nil {
		return err
	}
	views, err := pgx.CollectRows(rows, pgx.RowToStructByPos[view])
	if err != nil {
		return err
	}
	// All locks at once, views first: queries lock a view before its
	// tables.
	var locks []string
	for _, v := range views {
		locks = append(locks, v.Name)
	}
	for _, t := range tables {
		locks = append(locks, quoted(t), quoted(t+shadowSuffix))
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(locks, ", ")+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		return err
	}
	type grant struct{ Table, Grantee, Privilege string }
	rows, err = tx.Query(ctx, `
		SELECT c.relname::text, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END, a.privilege_type
		FROM pg_class c, aclexplode(c.relacl) a
		WHERE c.oid = ANY($1::regclass[])`, quotedAll(tables))
	if err != nil {
		return err
	}
	grants, err := pgx.CollectRows(rows, pgx.RowToStructByPos[grant])
	if err != nil {
		return err
	}

	for _, t := range tables {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+quoted(t)+` RENAME TO `+quoted(t+"_old")); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE `+quoted(t+shadowSuffix)+` RENAME TO `+quoted(t)); err != nil {
			return err
		}
	}
	// Re-creating a view from its text binds it to the new tables (a view
	// follows a table by identity, not by name) and keeps its grants.
	for _, v := range views {
		if _, err := tx.Exec(ctx, `CREATE OR REPLACE VIEW `+v.Name+` AS `+v.Def); err != nil {
			return fmt.Errorf("rebind view %s: %w", v.Name, err)
		}
	}
	// Sequences owned by a live column (bigserial) must not go with it.
	for _, t := range tables {
		rows, err := tx.Query(ctx, `
			SELECT s.oid::regclass::text, a.attname::text
			FROM pg_depend d
			JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
			JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
			WHERE d.classid = 'pg_class'::regclass AND d.refobjid = $1::regclass AND d.deptype = 'a'`, quoted(t+"_old"))
		if err != nil {
			return err
		}
		owned, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Seq, Column string }])
		if err != nil {
			return err
		}
		for _, o := range owned {
			if _, err := tx.Exec(ctx, `ALTER SEQUENCE `+o.Seq+` OWNED BY `+quoted(t)+`.`+quoted(o.Column)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DROP TABLE `+quoted(t+"_old")); err != nil {
			return err
		}
	}
	// Give the indexes and constraints the live names again.
	rows, err = tx.Query(ctx, `
		SELECT t.relname::text, i.relname::text, c.conname IS NOT NULL
		FROM pg_index x
		JOIN pg_class i ON i.oid = x.indexrelid
		JOIN pg_class t ON t.oid = x.indrelid
		LEFT JOIN pg_constraint c ON c.conindid = x.indexrelid AND c.conrelid = x.indrelid
		WHERE x.indrelid = ANY($1::regclass[]) AND right(i.relname, length($2)) = $2`, quotedAll(tables), shadowIndexSuffix)
	if err != nil {
		return err
	}
	renames, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Table, Index string
		Constraint   bool
	}])
	if err != nil {
		return err
	}
	for _, r := range renames {
		live := strings.TrimSuffix(r.Index, shadowIndexSuffix)
		sql := `ALTER INDEX ` + quoted(r.Index) + ` RENAME TO ` + quoted(live)
		if r.Constraint {
			sql = `ALTER TABLE ` + quoted(r.Table) + ` RENAME CONSTRAINT ` + quoted(r.Index) + ` TO ` + quoted(live)
		}
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
	}
	for _, g := range grants {
		if _, err := tx.Exec(ctx, `GRANT `+g.Privilege+` ON `+quoted(g.Table)+` TO `+g.Grantee); err != nil {
			return err
		}
	}
	for name, at := range checkpoints {
		c, p, err := position64(at)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE projection_checkpoints
			SET position_commit = $2, position_prepare = $3, updated_at = now(),
			    last_error = NULL, error_position_commit = NULL, error_position_prepare = NULL
			WHERE name = $1`, name, c, p); err != nil {
			return err
		}
	}
	return nil
}

func quotedAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quoted(n)
	}
	return out
}
