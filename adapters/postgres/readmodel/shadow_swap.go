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

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections"
)

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

// swap is one attempt of Swap, in tx: the patches, the replacements, then
// the checkpoints, which clear any error a live projector recorded.
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
	gk := groupKey(spec) + ` = ANY($1)`
	args := []any{groups}
	if spec.groupFilter != nil {
		var extra []any
		gk, extra = spec.groupFilter(gk, groups)
		args = append(args, extra...)
	}
	if _, err := tx.Exec(ctx, `
		WITH s AS MATERIALIZED (SELECT * FROM `+sh+` WHERE `+gk+`)
		DELETE FROM `+live+` WHERE `+gk+`
		  AND NOT EXISTS (SELECT 1 FROM s WHERE `+strings.Join(append(match, same...), " AND ")+`)`, args...); err != nil {
		return fmt.Errorf("repair %s: %w", table, err)
	}
	cols := joinQuoted("", append(append(slices.Clone(spec.key), spec.compare...), spec.extra...))
	var keyMatch []string
	for _, k := range spec.key {
		keyMatch = append(keyMatch, "l."+quoted(k)+" = "+sh+"."+quoted(k))
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO `+live+` (`+cols+`)
		SELECT `+cols+` FROM `+sh+` WHERE `+gk+`
		  AND NOT EXISTS (SELECT 1 FROM `+live+` l WHERE `+strings.Join(keyMatch, " AND ")+`)`, args...); err != nil {
		return fmt.Errorf("repair %s: %w", table, err)
	}
	return nil
}

// replace renames the shadows of tables into their places, with the live
// tables' grants, dependent views and sequences.
func replace(ctx context.Context, tx pgx.Tx, tables []string) error {
	// Before the rename: the views' text and the tables' grants, which
	// still name the live tables.
	views, err := dependentViews(ctx, tx, tables)
	if err != nil {
		return err
	}
	if err := lockForReplace(ctx, tx, views, tables); err != nil {
		return err
	}
	grants, err := tableGrants(ctx, tx, tables)
	if err != nil {
		return err
	}
	if err := renameShadows(ctx, tx, tables); err != nil {
		return err
	}
	// Re-creating a view from its text binds it to the new tables (a view
	// follows a table by identity, not by name) and keeps its grants.
	for _, v := range views {
		if _, err := tx.Exec(ctx, `CREATE OR REPLACE VIEW `+v.Name+` AS `+v.Def); err != nil {
			return fmt.Errorf("rebind view %s: %w", v.Name, err)
		}
	}
	for _, t := range tables {
		if err := dropOld(ctx, tx, t); err != nil {
			return err
		}
	}
	if err := renameShadowIndexes(ctx, tx, tables); err != nil {
		return err
	}
	for _, g := range grants {
		if _, err := tx.Exec(ctx, `GRANT `+g.Privilege+` ON `+quoted(g.Table)+` TO `+g.Grantee); err != nil {
			return err
		}
	}
	return nil
}

// dependentView is a view reading one of the replaced tables: its name
// and its text.
type dependentView struct{ Name, Def string }

// dependentViews returns the views that read tables.
func dependentViews(ctx context.Context, tx pgx.Tx, tables []string) ([]dependentView, error) {
	rows, err := tx.Query(ctx, `
		SELECT DISTINCT v.oid::regclass::text, pg_get_viewdef(v.oid)
		FROM pg_depend d
		JOIN pg_rewrite r ON r.oid = d.objid
		JOIN pg_class v ON v.oid = r.ev_class
		WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
		  AND d.refobjid = ANY($1::regclass[]) AND v.oid <> d.refobjid`, quotedAll(tables))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[dependentView])
}

// lockForReplace takes all the locks at once, views first: queries lock a
// view before its tables.
func lockForReplace(ctx context.Context, tx pgx.Tx, views []dependentView, tables []string) error {
	var locks []string
	for _, v := range views {
		locks = append(locks, v.Name)
	}
	for _, t := range tables {
		locks = append(locks, quoted(t), quoted(t+shadowSuffix))
	}
	_, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(locks, ", ")+` IN ACCESS EXCLUSIVE MODE`)
	return err
}

// tableGrant is one privilege granted on a live table.
type tableGrant struct{ Table, Grantee, Privilege string }

// tableGrants returns the privileges granted on tables.
func tableGrants(ctx context.Context, tx pgx.Tx, tables []string) ([]tableGrant, error) {
	rows, err := tx.Query(ctx, `
		SELECT c.relname::text, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END, a.privilege_type
		FROM pg_class c, aclexplode(c.relacl) a
		WHERE c.oid = ANY($1::regclass[])`, quotedAll(tables))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[tableGrant])
}

// renameShadows moves each live table aside (<table>_old) and its shadow
// into its place.
func renameShadows(ctx context.Context, tx pgx.Tx, tables []string) error {
	for _, t := range tables {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+quoted(t)+` RENAME TO `+quoted(t+"_old")); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE `+quoted(t+shadowSuffix)+` RENAME TO `+quoted(t)); err != nil {
			return err
		}
	}
	return nil
}

// dropOld drops the replaced table moved aside, once the sequences its
// columns own (bigserial) belong to the new table's: they must not go with
// it.
func dropOld(ctx context.Context, tx pgx.Tx, table string) error {
	rows, err := tx.Query(ctx, `
		SELECT s.oid::regclass::text, a.attname::text
		FROM pg_depend d
		JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
		JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
		WHERE d.classid = 'pg_class'::regclass AND d.refobjid = $1::regclass AND d.deptype = 'a'`, quoted(table+"_old"))
	if err != nil {
		return err
	}
	owned, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Seq, Column string }])
	if err != nil {
		return err
	}
	for _, o := range owned {
		if _, err := tx.Exec(ctx, `ALTER SEQUENCE `+o.Seq+` OWNED BY `+quoted(table)+`.`+quoted(o.Column)); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `DROP TABLE `+quoted(table+"_old"))
	return err
}

// renameShadowIndexes gives the indexes and constraints of the tables
// (shadows until now) the live names again.
func renameShadowIndexes(ctx context.Context, tx pgx.Tx, tables []string) error {
	rows, err := tx.Query(ctx, `
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
	return nil
}

func quotedAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quoted(n)
	}
	return out
}
