// Package readmodel is the Postgres side of the projections and of the one
// read side: the SQL that writes the read-model tables (ledger_entries,
// account_balances, payments, reconciliation_items, payouts,
// settlement_lines, periods, period_balances), the projection checkpoints
// and advisory locks, the shadow tables of a rebuild and their checksums,
// the invariant checks, and the queries both front ends make, the /v1 API
// and the console alike (the read models, and the inbox's deliveries and
// counts), in the shapes of package views. It implements the ports
// declared by package projections and by the front ends, and imports no
// front end. Other SQL lives with its own adapter: the events and the
// inbox's writes in adapters/postgres, the console's sessions in
// adapters/postgres/sessionstore.
package readmodel

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections"
)

// Store is the read-model database.
type Store struct {
	pool *pgxpool.Pool
}

var (
	_ projections.RuntimeDB = (*Store)(nil)
	_ projections.ShadowDB  = (*Store)(nil)
	_ projections.AuditDB   = (*Store)(nil)
)

// New returns the read-model store over pool; its database must have the
// migrations applied.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Advisory lock keys: (lockClass+kind, hash of the projection name), the
// two-int4 form, so pg_locks shows classid and objid apart.
const lockClass = 0x6F4C0000

func lockKeys(kind projections.LockKind, name string) (int32, int32) {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int32(lockClass + int32(kind)), int32(h.Sum32() & math.MaxInt32)
}

// sessionLock is an advisory lock held by a connection taken out of the
// pool, so that the lock dies with the connection and no pooled query ever
// runs on it.
type sessionLock struct {
	conn      *pgx.Conn
	class, id int32
}

func (l *sessionLock) Alive(ctx context.Context) error {
	if err := l.conn.Ping(ctx); err != nil {
		return classify(err)
	}
	return nil
}

func (l *sessionLock) Release(ctx context.Context) error {
	_, err := l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, l.class, l.id)
	cerr := l.conn.Close(ctx)
	return errors.Join(classify(err), cerr)
}

// TryLock takes the lock if free; a pooled connection is only kept (taken
// out of the pool) when it got the lock.
func (s *Store) TryLock(ctx context.Context, kind projections.LockKind, name string) (projections.Lock, bool, error) {
	class, id := lockKeys(kind, name)
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, classify(err)
	}
	var ok bool
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, class, id).Scan(&ok); err != nil {
		c.Release()
		return nil, false, classify(err)
	}
	if !ok {
		c.Release()
		return nil, false, nil
	}
	return &sessionLock{conn: c.Hijack(), class: class, id: id}, true, nil
}

// Lock waits for the lock (until ctx ends).
func (s *Store) Lock(ctx context.Context, kind projections.LockKind, name string) (projections.Lock, error) {
	class, id := lockKeys(kind, name)
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, classify(err)
	}
	conn := c.Hijack()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, class, id); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, classify(err)
	}
	return &sessionLock{conn: conn, class: class, id: id}, nil
}

// LockHeld reports whether some session holds the lock of kind for name.
func (s *Store) LockHeld(ctx context.Context, kind projections.LockKind, name string) (bool, error) {
	class, id := lockKeys(kind, name)
	var held bool
	err := s.pool.QueryRow(ctx, `
		SELECT EXISTS (
			SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND granted
			  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND classid = $1::int8::oid AND objid = $2::int8::oid AND objsubid = 2)`,
		int64(class), int64(id)).Scan(&held)
	return held, classify(err)
}

// EnsureCheckpoints creates missing checkpoint rows at the start of the feed.
func (s *Store) EnsureCheckpoints(ctx context.Context, names []string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO projection_checkpoints (name) SELECT unnest($1::text[])
		ON CONFLICT (name) DO NOTHING`, names)
	return classify(err)
}

const checkpointColumns = `name, position_commit, position_prepare, status, coalesce(last_error, ''),
	error_position_commit, error_position_prepare, updated_at`

func scanCheckpoint(row pgx.Row) (projections.Checkpoint, error) {
	var r checkpointRow
	if err := row.Scan(&r.name, &r.commit, &r.prepare, &r.status, &r.lastError, &r.errCommit, &r.errPrepare, &r.updatedAt); err != nil {
		return projections.Checkpoint{}, err
	}
	return r.checkpoint(), nil
}

// Checkpoint returns one projection's checkpoint row.
func (s *Store) Checkpoint(ctx context.Context, name string) (projections.Checkpoint, error) {
	cp, err := scanCheckpoint(s.pool.QueryRow(ctx, `SELECT `+checkpointColumns+` FROM projection_checkpoints WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return cp, fmt.Errorf("projection %q has no checkpoint row", name)
	}
	return cp, classify(err)
}

// Checkpoints returns every checkpoint row, by name.
func (s *Store) Checkpoints(ctx context.Context) ([]projections.Checkpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+checkpointColumns+` FROM projection_checkpoints ORDER BY name`)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (projections.Checkpoint, error) { return scanCheckpoint(r) })
	return out, classify(err)
}

// SetStatus sets a projection's status.
func (s *Store) SetStatus(ctx context.Context, name, status string) error {
	_, err := s.pool.Exec(ctx, `UPDATE projection_checkpoints SET status = $2, updated_at = now() WHERE name = $1`, name, status)
	return classify(err)
}

// RecordPoison stores why and where the projection stopped.
func (s *Store) RecordPoison(ctx context.Context, name string, at eventstore.Position, msg string) error {
	// A position the columns cannot hold is itself the poison (see
	// position64): record the stop with the position in the message and
	// none in the columns, rather than failing to record it at all.
	var c, p *int64
	if ci, pi, err := position64(at); err == nil {
		c, p = &ci, &pi
	} else {
		msg = fmt.Sprintf("%s (at position %s, beyond the checkpoint columns)", msg, at)
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE projection_checkpoints
		SET status = 'stopped', last_error = $2, error_position_commit = $3, error_position_prepare = $4, updated_at = now()
		WHERE name = $1`, name, msg, c, p)
	return classify(err)
}

// BeginLive starts a batch on the live tables (see projections.RuntimeDB).
func (s *Store) BeginLive(ctx context.Context, name string, from eventstore.Position, honorPause bool) (projections.Batch, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, classify(err)
	}
	fail := func(err error) (projections.Batch, error) {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	// One round trip: the pause lock, the checkpoint row (locked) and the
	// commit mode. Shared and transaction-scoped, the pause lock makes
	// batches never wait for each other, and a rebuild's exclusive lock
	// waits only for the batch in flight (honorPause false: true without
	// asking).
	//
	// A live batch commits without waiting for its WAL flush
	// (synchronous_commit off): it only derives from events already
	// durable, and its checkpoint commits with it, so a Postgres crash can
	// only lose the last batches whole, and the projector replays them from
	// the feed. Waiting for the flush cost each batch a disk round trip
	// and queued ingest's commits, which must wait, behind it.
	class, id := lockKeys(projections.LockPause, name)
	var ok bool
	var c, p int64
	err = tx.QueryRow(ctx, `
		SELECT CASE WHEN $4 THEN pg_try_advisory_xact_lock_shared($2, $3) ELSE true END,
		       position_commit, position_prepare, set_config('synchronous_commit', 'off', true)
		FROM projection_checkpoints WHERE name = $1 FOR UPDATE`, name, class, id, honorPause).Scan(&ok, &c, &p, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return fail(fmt.Errorf("projection %q has no checkpoint row", name))
	}
	if err != nil {
		return fail(classify(err))
	}
	if !ok {
		return fail(projections.ErrPaused)
	}
	if (eventstore.Position{Commit: uint64(c), Prepare: uint64(p)}) != from {
		return fail(projections.ErrCheckpointMoved)
	}
	return &writer{tx: tx, checkpoint: name}, nil
}

// BeginShadow starts a batch on the shadow tables of a rebuild, in bulk:
// ledger entries are copied without touching balances (FinishBulk computes
// them) and without conflict checks (the shadow has no unique index; the
// feed holds each event once).
//
// Shadow batches commit without waiting for their WAL flush
// (synchronous_commit off): a shadow is worth nothing until the swap, a
// rebuild that does not finish starts over from an empty shadow, and the
// swap's own commit is synchronous, which flushes every earlier commit
// with it (the WAL is written in order).
func (s *Store) BeginShadow(ctx context.Context) (projections.Batch, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, classify(err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, classify(err)
	}
	return &writer{tx: tx, shadow: true, bulk: true}, nil
}

type checkpointRow struct {
	name                  string
	commit, prepare       int64
	status, lastError     string
	errCommit, errPrepare *int64
	updatedAt             time.Time
}

func (r checkpointRow) checkpoint() projections.Checkpoint {
	cp := projections.Checkpoint{
		Name:      r.name,
		Position:  eventstore.Position{Commit: uint64(r.commit), Prepare: uint64(r.prepare)},
		Status:    r.status,
		LastError: r.lastError,
		UpdatedAt: r.updatedAt,
	}
	if r.errCommit != nil && r.errPrepare != nil {
		cp.ErrorPosition = &eventstore.Position{Commit: uint64(*r.errCommit), Prepare: uint64(*r.errPrepare)}
	}
	return cp
}

// position64 converts a feed position to the bigint columns.
func position64(p eventstore.Position) (int64, int64, error) {
	if p.Commit > math.MaxInt64 || p.Prepare > math.MaxInt64 {
		return 0, 0, fmt.Errorf("%w: position %s does not fit bigint columns", projections.ErrPoison, p)
	}
	return int64(p.Commit), int64(p.Prepare), nil
}

// classify marks errors that will fail the same way on every retry (bad
// data, constraint violations, a schema that does not match the code) as
// projections.ErrPoison; everything else (connections, timeouts,
// serialization failures, locks, shutdowns) stays retryable.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		code := pgErr.Code
		if pgerrcode.IsCardinalityViolation(code) || pgerrcode.IsDataException(code) ||
			pgerrcode.IsIntegrityConstraintViolation(code) || pgerrcode.IsDependentPrivilegeDescriptorsStillExist(code) ||
			pgerrcode.IsSyntaxErrororAccessRuleViolation(code) || pgerrcode.IsWithCheckOptionViolation(code) {
			return fmt.Errorf("%w: %w", projections.ErrPoison, err)
		}
	}
	return err
}

// quoted quotes an SQL identifier.
func quoted(name string) string { return pgx.Identifier{name}.Sanitize() }

// joinQuoted quotes and joins identifiers, each prefixed by alias.
func joinQuoted(alias string, names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = alias + quoted(n)
	}
	return strings.Join(q, ", ")
}
