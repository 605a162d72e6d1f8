package readmodel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections"
)

// tableSpec says how a rebuild treats a read-model table: which columns
// identify a row, which hold data to compare (ids from sequences and
// updated_at wall-clock stamps legitimately differ), which other columns a
// repair in place copies, how rows are grouped for the checksum comparison
// (SQL expressions over the table's columns, never NULL), and whether the
// shadow needs its unique constraints during the load (tables written with
// ON CONFLICT upserts do; ledger_entries is COPYed and account_balances
// computed at the end).
type tableSpec struct {
	key, compare, extra []string
	group               []string
	eagerKeys           bool
}

var tableSpecs = map[string]tableSpec{
	"ledger_entries": {
		key: []string{"event_id", "posting_index"},
		compare: []string{"stream_id", "event_type", "provider", "account", "currency", "amount",
			"occurred_at", "recorded_at", "position_commit", "position_prepare",
			"period", "late_adjustment", "adjusts_period"},
		// Per account, currency and (UTC) day of the fact. The day is
		// spelled by to_char, not ::date::text, whose spelling follows the
		// session's DateStyle: the checksum pass names the same groups in Go
		// (checksum.go, YYYY-MM-DD), and a server set to another style would
		// make every group differ.
		group: []string{"account", "currency", "to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"},
	},
	// The calendar's rows come from the periods stream's events (their
	// times are the events' own), so a rebuild reproduces them exactly;
	// both tables are written with upserts.
	"periods": {
		key: []string{"period"},
		compare: []string{"status", "books_start", "zone", "closed_at", "closed_by", "close_note", "close_event_id",
			"reopened_at", "reopened_by", "reopen_reason", "reopen_event_id", "content_hash"},
		group:     []string{"period"},
		eagerKeys: true,
	},
	"period_balances": {
		key:       []string{"period", "account", "currency"},
		compare:   []string{"opening", "debits", "credits", "closing", "content_hash"},
		group:     []string{"period", "currency"},
		eagerKeys: true,
	},
	"account_balances": {
		key:     []string{"account", "currency"},
		compare: []string{"balance", "entry_count"},
		extra:   []string{"updated_at"},
		group:   []string{"account", "currency"},
	},
	"payments": {
		key: []string{"provider", "payment_id"},
		compare: []string{"stream_id", "status", "currency", "authorized_amount", "captured_amount", "fee_amount",
			"refunded_amount", "refund_pending_amount", "dispute_open_amount", "dispute_lost_amount",
			"failed", "canceled", "version", "updated_at"},
		group:     []string{"provider", "coalesce(currency, '')", "to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"},
		eagerKeys: true,
	},
	"reconciliation_items": {
		key: []string{"stream_id", "kind", "item_key"},
		compare: []string{"status", "provider", "payment_id", "details", "opened_at", "resolved_at",
			"opened_event_id", "resolved_event_id", "resolved_by", "note"},
		group:     []string{"provider", "kind"},
		eagerKeys: true,
	},
	"settlement_lines": {
		key: []string{"provider", "line_key"},
		compare: []string{"kind", "source_type", "line_id", "payment_id", "capture_id", "refund_id", "dispute_id",
			"gross", "fee", "net", "currency", "original_amount", "original_currency", "exchange_rate", "payout_id",
			"occurred_at", "available_on", "stream_id"},
		group:     []string{"provider", "currency"},
		eagerKeys: true,
	},
	"payouts": {
		key: []string{"provider", "payout_id"},
		compare: []string{"amount", "currency", "arrival_date", "paid", "failed", "status", "line_count",
			"lines_net", "difference"},
		group:     []string{"provider", "coalesce(currency, '')"},
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
			// from the live sequence) and NOT NULL, but no CHECK constraints
			// and no indexes: a shadow that replaces its live table gets them
			// after the load (IndexShadow), and one that only serves the
			// comparison never needs them (rows repaired into a live table
			// pass its checks there).
			//
			// UNLOGGED: the load writes no WAL. A shadow is worth nothing
			// until the swap, and a crash that empties it only repeats the
			// rebuild; one that replaces its live table is made LOGGED first.
			if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+sh); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE UNLOGGED TABLE `+sh+` (LIKE `+quoted(t)+
				` INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING STORAGE)`); err != nil {
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

// FinishBulk fills the shadow balances: with totals if the rebuild added
// them up while loading the entries (nil: from the loaded entries, in one
// scan). It runs once, after the last entry is loaded.
func (s *Store) FinishBulk(ctx context.Context, tables []string, totals []projections.BalanceTotal) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	if !slices.Contains(tables, "account_balances") || !slices.Contains(tables, "ledger_entries") {
		return nil
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `TRUNCATE account_balances_shadow`); err != nil {
			return err
		}
		if totals == nil {
			_, err := tx.Exec(ctx, `
				INSERT INTO account_balances_shadow (account, currency, balance, entry_count, updated_at)
				SELECT account, currency, sum(amount)::bigint, count(*), now()
				FROM ledger_entries_shadow GROUP BY account, currency`)
			return err
		}
		accts, curs := make([]string, len(totals)), make([]string, len(totals))
		sums, counts := make([]int64, len(totals)), make([]int64, len(totals))
		for i, t := range totals {
			accts[i], curs[i], sums[i], counts[i] = t.Account, string(t.Currency), t.Balance, t.Entries
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO account_balances_shadow (account, currency, balance, entry_count, updated_at)
			SELECT a, c, b, n, now() FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS t(a, c, b, n)`,
			accts, curs, sums, counts)
		return err
	})
}

// indexBuilders is how many index builds run at once: each is one
// connection, and Postgres gives each build its own parallel workers too.
const indexBuilders = 2

// IndexShadow gives the shadows the live tables' keys and indexes, then
// refreshes the planner's statistics. The builds run side by side on
// several connections (CREATE INDEX takes a SHARE lock, which does not
// conflict with another build on the same table); keys are built as unique
// indexes that way too, and then attached as constraints (ADD CONSTRAINT
// ... USING INDEX, instantaneous).
func (s *Store) IndexShadow(ctx context.Context, tables []string) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	type job struct{ table, sql, attach string }
	var jobs []job
	for _, t := range tables {
		if err := s.logShadow(ctx, t); err != nil {
			return err
		}
		ks, err := s.missingConstraints(ctx, t)
		if err != nil {
			return err
		}
		for _, k := range ks {
			jobs = append(jobs, job{table: t, sql: k.create, attach: k.attach})
		}
		is, err := s.shadowIndexes(ctx, t)
		if err != nil {
			return err
		}
		for _, i := range is {
			jobs = append(jobs, job{table: t, sql: i})
		}
	}
	work := make(chan job)
	g, gctx := errgroup.WithContext(ctx)
	for range indexBuilders {
		g.Go(func() error {
			for j := range work {
				if _, err := s.pool.Exec(gctx, j.sql); err != nil {
					return fmt.Errorf("%s: %w", j.sql, err)
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(work)
		for _, j := range jobs {
			select {
			case work <- j:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, j := range jobs {
			if j.attach != "" {
				if _, err := tx.Exec(ctx, j.attach); err != nil {
					return err
				}
			}
		}
		for _, t := range tables {
			if _, err := tx.Exec(ctx, `ANALYZE `+quoted(t+shadowSuffix)); err != nil {
				return err
			}
		}
		return nil
	})
}

// logShadow makes a shadow that will replace its live table LOGGED (it is
// rewritten with WAL, so it survives a crash and reaches replicas), with
// the live table's CHECK constraints, under their live names (CHECK names
// are per table).
func (s *Store) logShadow(ctx context.Context, table string) error {
	sh := quoted(table + shadowSuffix)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+sh+` SET LOGGED`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT c.conname, pg_get_constraintdef(c.oid)
			FROM pg_constraint c
			WHERE c.conrelid = $1::regclass AND c.contype = 'c'
			  AND NOT EXISTS (SELECT 1 FROM pg_constraint s WHERE s.conrelid = $2::regclass AND s.conname = c.conname)
			ORDER BY c.conname`, quoted(table), sh)
		if err != nil {
			return err
		}
		checks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Name, Def string }])
		if err != nil {
			return err
		}
		for _, c := range checks {
			if _, err := tx.Exec(ctx, `ALTER TABLE `+sh+` ADD CONSTRAINT `+quoted(c.Name)+` `+c.Def); err != nil {
				return err
			}
		}
		return nil
	})
}

type constraintBuild struct{ create, attach string }

// missingConstraints returns, for each primary key and unique constraint
// of the live table that its shadow lacks, the unique index to build and
// the statement attaching it as the constraint.
func (s *Store) missingConstraints(ctx context.Context, table string) ([]constraintBuild, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT c.conname, c.contype::text, pg_get_indexdef(c.conindid)
		FROM pg_constraint c
		WHERE c.conrelid = $1::regclass AND c.contype IN ('p', 'u')
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint s
		                  WHERE s.conrelid = $2::regclass AND s.conname = c.conname || $3)
		ORDER BY c.contype, c.conname`, quoted(table), quoted(table+shadowSuffix), shadowIndexSuffix)
	if err != nil {
		return nil, err
	}
	defs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Name, Type, Def string }])
	if err != nil {
		return nil, err
	}
	var out []constraintBuild
	for _, d := range defs {
		using, err := indexUsing(d.Name, d.Def)
		if err != nil {
			return nil, err
		}
		name := quoted(d.Name + shadowIndexSuffix)
		kind := "UNIQUE"
		if d.Type == "p" {
			kind = "PRIMARY KEY"
		}
		out = append(out, constraintBuild{
			create: `CREATE UNIQUE INDEX ` + name + ` ON ` + quoted(table+shadowSuffix) + using,
			attach: `ALTER TABLE ` + quoted(table+shadowSuffix) + ` ADD CONSTRAINT ` + name + ` ` + kind + ` USING INDEX ` + name,
		})
	}
	return out, nil
}

// shadowIndexes returns the CREATE INDEX statements of the live table's
// plain indexes (those not backing a constraint), for its shadow.
func (s *Store) shadowIndexes(ctx context.Context, table string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT i.relname, x.indisunique, pg_get_indexdef(x.indexrelid)
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
		WHERE x.indrelid = $1::regclass
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid)
		ORDER BY i.relname`, quoted(table))
	if err != nil {
		return nil, err
	}
	defs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		Name   string
		Unique bool
		Def    string
	}])
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range defs {
		using, err := indexUsing(d.Name, d.Def)
		if err != nil {
			return nil, err
		}
		unique := ""
		if d.Unique {
			unique = "UNIQUE "
		}
		out = append(out, `CREATE `+unique+`INDEX `+quoted(d.Name+shadowIndexSuffix)+` ON `+quoted(table+shadowSuffix)+using)
	}
	return out, nil
}

// indexUsing keeps the part of an index definition ("CREATE INDEX name ON
// public.table USING btree (...)") from USING on, which names only
// columns.
func indexUsing(name, def string) (string, error) {
	at := strings.Index(def, " USING ")
	if at < 0 {
		return "", fmt.Errorf("readmodel: unexpected definition of index %s: %s", name, def)
	}
	return def[at:], nil
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
	var comps []projections.TableComparison
	var diffs []projections.Difference
	// One snapshot for the row comparisons.
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		for i, t := range tables {
			c := projections.CompareSums(t, sums[2*i], sums[2*i+1])
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
				n, ds, err := compareRows(ctx, tx, t, c.DifferingGroups, maxRows)
				if err != nil {
					return err
				}
				c.DifferingRows = n
				diffs = append(diffs, ds...)
			}
			comps = append(comps, c)
		}
		return nil
	})
	return comps, diffs, err
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

// compareScans is how many checksum scans run at once.
const compareScans = 2

// liveSnapshot is a read-only repeatable-read transaction kept open so
// that other transactions can import its snapshot (pg_export_snapshot). It
// has no transaction id (it writes nothing), so it holds back neither the
// feed horizon nor anyone's writes; it only keeps the row versions it sees
// from being vacuumed while it lasts.
type liveSnapshot struct {
	tx pgx.Tx
	id string
}

func (l *liveSnapshot) Close(ctx context.Context) error { return l.tx.Rollback(ctx) }

// SnapshotLive exports a snapshot of the read model as it is now.
func (s *Store) SnapshotLive(ctx context.Context) (projections.LiveSnapshot, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	var id string
	if err := tx.QueryRow(ctx, `SELECT pg_export_snapshot()`).Scan(&id); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	// SET TRANSACTION SNAPSHOT takes no parameter: the id goes into the
	// statement, so it must look like one ("00000003-0000001B-1").
	if id == "" || strings.Trim(id, "0123456789ABCDEFabcdef-") != "" {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("readmodel: unexpected snapshot id %q", id)
	}
	return &liveSnapshot{tx: tx, id: id}, nil
}

// Checksums compares each shadow table with its live table by per-group
// checksums only (the first step of Compare): the live tables as snap saw
// them, the shadows as they are now (nothing but the rebuild writes them).
// The live projectors may run meanwhile.
func (s *Store) Checksums(ctx context.Context, snap projections.LiveSnapshot, tables []string) ([]projections.TableComparison, error) {
	if err := checkTables(tables); err != nil {
		return nil, err
	}
	ls, ok := snap.(*liveSnapshot)
	if !ok || ls == nil {
		return nil, errors.New("readmodel: Checksums needs a snapshot from SnapshotLive")
	}
	sums, err := s.checksums(ctx, tables, ls.id)
	if err != nil {
		return nil, err
	}
	out := make([]projections.TableComparison, len(tables))
	for i, t := range tables {
		out[i] = projections.CompareSums(t, sums[2*i], sums[2*i+1])
	}
	return out, nil
}

// checksums scans each table and its shadow (in that order in the result,
// two entries per table) into per-group sums, side by side. The live side
// is read in the exported snapshot liveSnap if set; otherwise the live
// projectors are paused and the shadows complete, so nothing changes the
// tables meanwhile: separate snapshots see the same rows.
func (s *Store) checksums(ctx context.Context, tables []string, liveSnap string) ([]projections.TableSums, error) {
	out := make([]projections.TableSums, 2*len(tables))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(compareScans)
	for i, t := range tables {
		for side, name := range []string{t, t + shadowSuffix} {
			snap := ""
			if side == 0 {
				snap = liveSnap
			}
			g.Go(func() error {
				sums, err := s.checksum(gctx, t, name, snap)
				out[2*i+side] = sums
				return err
			})
		}
	}
	return out, g.Wait()
}

// checksum is one table's (live or shadow) per-group row counts and XOR of
// row hashes, in the exported snapshot snap if set.
func (s *Store) checksum(ctx context.Context, table, name, snap string) (projections.TableSums, error) {
	spec := tableSpecs[table]
	out := projections.TableSums{}
	opts := pgx.TxOptions{AccessMode: pgx.ReadOnly}
	if snap != "" {
		opts.IsoLevel = pgx.RepeatableRead
	}
	err := pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		if snap != "" {
			if _, err := tx.Exec(ctx, `SET TRANSACTION SNAPSHOT '`+snap+`'`); err != nil {
				return err
			}
		}
		// One sequential scan into a hash aggregate: the groups are few
		// (the planner, without statistics of the shadow, guesses hundreds
		// of thousands and would sort, or walk an index in group order,
		// both much slower: text sorts in the database's collation). JIT
		// costs more than it saves here.
		for _, set := range []string{"enable_sort = off", "enable_incremental_sort = off", "enable_indexscan = off",
			"enable_indexonlyscan = off", "enable_bitmapscan = off", "work_mem = '64MB'", "jit = off"} {
			if _, err := tx.Exec(ctx, `SET LOCAL `+set); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT `+groupKey(spec)+`, count(*), bit_xor(`+rowHash(spec)+`)
			FROM `+quoted(name)+` GROUP BY `+strings.Join(spec.group, ", "))
		if err != nil {
			return err
		}
		var g string
		var sum projections.GroupSum
		_, err = pgx.ForEachRow(rows, []any{&g, &sum.Rows, &sum.Hash}, func() error {
			out[g] = sum
			return nil
		})
		return err
	})
	return out, err
}

// groupKey is the text naming a row's checksum group (the group
// expressions' columns unqualified).
func groupKey(spec tableSpec) string {
	g := make([]string, len(spec.group))
	for i, e := range spec.group {
		g[i] = "(" + e + ")::text"
	}
	return "concat_ws('/', " + strings.Join(g, ", ") + ")"
}

// rowHash is the 64-bit hash of a row's key and compared columns.
func rowHash(spec tableSpec) string {
	return "hash_record_extended(ROW(" + joinQuoted("", append(slices.Clone(spec.key), spec.compare...)) + "), 0)"
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

// Swap brings the live tables to their shadows' content in one
// transaction: it replaces those of plan.Replace by their shadows (indexed
// beforehand by IndexShadow) and repairs those of plan.Patch in place.
func (s *Store) Swap(ctx context.Context, plan projections.SwapPlan, checkpoints map[string]eventstore.Position) error {
	if err := checkTables(plan.Replace); err != nil {
		return err
	}
	for t := range plan.Patch {
		if err := checkTables([]string{t}); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(swapBudget)
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return swap(ctx, tx, plan, checkpoints) })
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

// patch repairs a live table in place, in the given checksum groups: it
// deletes the live rows that have no identical row in the shadow, then
// inserts the shadow's rows whose key the live table no longer has. Rows
// keep their place (and ids) unless they differ. The live projector is
// paused, so nothing else writes the table meanwhile.
func patch(ctx context.Context, tx pgx.Tx, table string, groups []string) error {
	spec := tableSpecs[table]
	live, sh := quoted(table), quoted(table+shadowSuffix)
	var match, same []string
	for _, k := range spec.key {
		match = append(match, "s."+quoted(k)+" = "+live+"."+quoted(k))
	}
	for _, c := range spec.compare {
		same = append(same, "s."+quoted(c)+" IS NOT DISTINCT FROM "+live+"."+quoted(c))
	}
	gk := groupKey(spec)
	if _, err := tx.Exec(ctx, `
		WITH s AS MATERIALIZED (SELECT * FROM `+sh+` WHERE `+gk+` = ANY($1))
		DELETE FROM `+live+` WHERE `+gk+` = ANY($1)
		  AND NOT EXISTS (SELECT 1 FROM s WHERE `+strings.Join(append(match, same...), " AND ")+`)`, groups); err != nil {
		return fmt.Errorf("repair %s: %w", table, err)
	}
	cols := joinQuoted("", append(append(slices.Clone(spec.key), spec.compare...), spec.extra...))
	var keyMatch []string
	for _, k := range spec.key {
		keyMatch = append(keyMatch, "l."+quoted(k)+" = "+sh+"."+quoted(k))
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO `+live+` (`+cols+`)
		SELECT `+cols+` FROM `+sh+` WHERE `+gk+` = ANY($1)
		  AND NOT EXISTS (SELECT 1 FROM `+live+` l WHERE `+strings.Join(keyMatch, " AND ")+`)`, groups); err != nil {
		return fmt.Errorf("repair %s: %w", table, err)
	}
	return nil
}

func swap(ctx context.Context, tx pgx.Tx, plan projections.SwapPlan, checkpoints map[string]eventstore.Position) error {
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+swapLockTimeout+`'`); err != nil {
		return err
	}
	for _, t := range slices.Sorted(maps.Keys(plan.Patch)) {
		if err := patch(ctx, tx, t, plan.Patch[t]); err != nil {
			return err
		}
	}
	if len(plan.Replace) > 0 {
		if err := replace(ctx, tx, plan.Replace); err != nil {
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

// replace renames the shadows of tables into their places, with the live
// tables' grants, dependent views and sequences.
func replace(ctx context.Context, tx pgx.Tx, tables []string) error {
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
	return nil
}

func quotedAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quoted(n)
	}
	return out
}
