package readmodel

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// indexBuilders is how many index builds (and SET LOGGED rewrites) run at
// once: each is one connection, and Postgres gives each build its own
// parallel workers too.
const indexBuilders = 2

// indexWorkMem is the least maintenance_work_mem a build gets (a session
// setting on its connection; a bigger server setting is kept). Postgres'
// default of 64MB makes the sort of a ledger index of a few million
// entries spill to disk and merge; the budget is split among the build's
// parallel workers (CREATE INDEX, "maintenance_work_mem"), and at most
// indexBuilders builds run at once.
const indexWorkMem = 256 << 20 // bytes

// IndexShadow gives the shadows the live tables' keys and indexes, then
// refreshes the planner's statistics. Each table is a pipeline of its own
// (made LOGGED, then its indexes built, then analyzed) and the pipelines
// share indexBuilders connections, the biggest table's first: the small
// tables' rewrites and builds run beside the ledger's instead of after
// them. CREATE INDEX takes a SHARE lock, which does not conflict with
// another build on the same table; keys are built as unique indexes that
// way too, and then attached as constraints (ADD CONSTRAINT ... USING
// INDEX, instantaneous).
func (s *Store) IndexShadow(ctx context.Context, tables []string) error {
	if err := checkTables(tables); err != nil {
		return err
	}
	order, err := s.bySize(ctx, tables)
	if err != nil {
		return err
	}
	slots := make(chan struct{}, indexBuilders)
	g, gctx := errgroup.WithContext(ctx)
	var mu sync.Mutex
	var jobs []indexJob
	for _, t := range order {
		g.Go(func() error {
			js, err := s.indexTable(gctx, slots, t)
			mu.Lock()
			jobs = append(jobs, js...)
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return s.attachIndexes(ctx, jobs)
}

// indexJob is one index to build on a shadow, and the statement attaching
// it as a constraint if it backs one.
type indexJob struct{ table, sql, attach string }

// bySize orders tables by the size of their shadows, biggest first: the
// longest pipeline starts first and the others fill in beside it.
func (s *Store) bySize(ctx context.Context, tables []string) ([]string, error) {
	sh := make([]string, len(tables))
	for i, t := range tables {
		sh[i] = t + shadowSuffix
	}
	rows, err := s.pool.Query(ctx, `
		SELECT left(t, length(t) - length($2))
		FROM unnest($1::text[]) WITH ORDINALITY AS u(t, i)
		ORDER BY pg_table_size(quote_ident(t)::regclass) DESC, i`, sh, shadowSuffix)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// indexTable is one table's pipeline: its shadow made LOGGED, the indexes
// it lacks built side by side (each holding a slot while it runs), then
// analyzed. It returns the jobs, whose constraints are still to attach.
func (s *Store) indexTable(ctx context.Context, slots chan struct{}, table string) ([]indexJob, error) {
	var jobs []indexJob
	err := withSlot(ctx, slots, func() error {
		if err := s.logShadow(ctx, table); err != nil {
			return err
		}
		var err error
		jobs, err = s.indexJobs(ctx, table)
		return err
	})
	if err != nil {
		return nil, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, j := range jobs {
		g.Go(func() error {
			return withSlot(gctx, slots, func() error { return s.build(gctx, j.sql) })
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return jobs, withSlot(ctx, slots, func() error {
		_, err := s.pool.Exec(ctx, `ANALYZE `+quoted(table+shadowSuffix))
		return err
	})
}

// withSlot runs f holding one of slots.
func withSlot(ctx context.Context, slots chan struct{}, f func() error) error {
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-slots }()
	return f()
}

// build runs one CREATE INDEX on a connection of its own, with at least
// indexWorkMem to sort in.
func (s *Store) build(ctx context.Context, sql string) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('maintenance_work_mem',
			greatest(pg_size_bytes(current_setting('maintenance_work_mem')), $1::bigint) / 1024 || 'kB', true)`,
			int64(indexWorkMem)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
		return nil
	})
}

// indexJobs returns the keys and indexes the shadow of table lacks.
func (s *Store) indexJobs(ctx context.Context, table string) ([]indexJob, error) {
	var jobs []indexJob
	ks, err := s.missingConstraints(ctx, table)
	if err != nil {
		return nil, err
	}
	for _, k := range ks {
		jobs = append(jobs, indexJob{table: table, sql: k.create, attach: k.attach})
	}
	is, err := s.shadowIndexes(ctx, table)
	if err != nil {
		return nil, err
	}
	for _, i := range is {
		jobs = append(jobs, indexJob{table: table, sql: i})
	}
	return jobs, nil
}

// attachIndexes attaches the built keys as constraints, in one
// transaction.
func (s *Store) attachIndexes(ctx context.Context, jobs []indexJob) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, j := range jobs {
			if j.attach != "" {
				if _, err := tx.Exec(ctx, j.attach); err != nil {
					return err
				}
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
