package readmodel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/onceledger/onceledger/projections"
)

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
