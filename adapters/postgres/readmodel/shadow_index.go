package readmodel

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

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
	jobs, err := s.indexJobs(ctx, tables)
	if err != nil {
		return err
	}
	if err := s.buildIndexes(ctx, jobs); err != nil {
		return err
	}
	return s.attachIndexes(ctx, tables, jobs)
}

// indexJob is one index to build on a shadow, and the statement attaching
// it as a constraint if it backs one.
type indexJob struct{ table, sql, attach string }

// indexJobs makes the shadows of tables LOGGED, with their CHECK
// constraints, and returns the indexes they lack.
func (s *Store) indexJobs(ctx context.Context, tables []string) ([]indexJob, error) {
	var jobs []indexJob
	for _, t := range tables {
		if err := s.logShadow(ctx, t); err != nil {
			return nil, err
		}
		ks, err := s.missingConstraints(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			jobs = append(jobs, indexJob{table: t, sql: k.create, attach: k.attach})
		}
		is, err := s.shadowIndexes(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, i := range is {
			jobs = append(jobs, indexJob{table: t, sql: i})
		}
	}
	return jobs, nil
}

// buildIndexes runs the builds, indexBuilders at a time.
func (s *Store) buildIndexes(ctx context.Context, jobs []indexJob) error {
	work := make(chan indexJob)
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
	return g.Wait()
}

// attachIndexes attaches the built keys as constraints and analyzes the
// shadows, in one transaction.
func (s *Store) attachIndexes(ctx context.Context, tables []string, jobs []indexJob) error {
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
