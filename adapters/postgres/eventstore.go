package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// NotifyChannel is the LISTEN/NOTIFY channel appends signal on commit.
const NotifyChannel = "onceledger_events"

// Constraint names from migrations/00001_foundation.sql.
const (
	constraintStreamVersion = "events_stream_version_key"
	constraintEventID       = "events_event_id_key"
)

// EventStore is the Postgres event store: one events table, streams
// versioned from 0, the global feed ordered by (tx_id, global_position).
//
// # The late-commit trap
//
// A reader tailing the feed with "position > checkpoint" must never see an
// event while an event before it in the feed can still commit, or it moves
// its checkpoint past that event and skips it forever. An identity column
// does not give that order: the value is taken at INSERT, long before
// COMMIT, so position 11 can become visible before position 10. The
// transaction id alone does not either: a transaction takes its xid at its
// first write (the recorder writes the inbox row first), so xids are not in
// position order, and a transaction with a smaller xid can commit after one
// with a larger xid.
//
// What holds: every transaction whose xid is below the xmin of the current
// snapshot (pg_snapshot_xmin(pg_current_snapshot())) has finished, and every
// transaction that has not finished, or has not started, has an xid >= xmin.
// So the feed is ordered by (tx_id, global_position), and ReadAll and Head
// only consider rows with tx_id below that horizon. Everything a reader can
// see is final, and anything that commits later sorts after it. xmin is
// cluster-wide, so the horizon actually used is feed_horizon()
// (migrations/00004_feed_horizon.sql): the same rule restricted to
// transactions that can belong to this database, so a long transaction in
// another database does not hold this feed back. The cost that remains: a
// write transaction of this database delays visibility of later events until
// it ends; keep write transactions short.
//
// # A monotonic horizon
//
// feed_horizon() can dip: a read-model transaction the horizon passed
// (00050) that ends between a later statement's snapshot and its read of
// pg_stat_activity is no longer seen as passable, and that statement's
// horizon falls back to its id, below what an earlier statement answered.
// Nothing read was wrong (the lower answer errs low), but the head went
// backwards: a checkpoint could be past it, a feed page come back empty
// after one that was not. So the horizon used is never below one already
// proven: floor holds the largest horizon this store has observed (a Head's
// horizon, or the transaction id + 1 of an event it returned, since an
// event is returned only below the horizon). Raising a later statement's
// horizon to it is safe: at the moment it was observed, every transaction
// below it that could write an event had ended, and transactions that
// start later take ids at or above it; a later statement's snapshot sees
// everything those ended transactions committed.
type EventStore struct {
	pool  *pgxpool.Pool
	tail  feedTail     // ReadAll's shared tail of the feed (feedcache.go)
	floor atomic.Int64 // the largest horizon known safe (see above)
}

var _ eventstore.Store = (*EventStore)(nil)

// NewEventStore returns an event store over pool, whose database must have
// the migrations applied.
func NewEventStore(pool *pgxpool.Pool) *EventStore {
	return &EventStore{pool: pool}
}

// querier is what reads need from a pool, a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Append writes events to stream atomically if expected holds, in its own
// transaction. See AppendTx for the semantics.
func (s *EventStore) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events []eventstore.EventData) (eventstore.AppendResult, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return eventstore.AppendResult{}, wrap("append: begin", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	res, err := s.AppendTx(ctx, tx, stream, expected, events)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return eventstore.AppendResult{}, wrap("append: commit", err)
	}
	return res, nil
}

// AppendTx appends inside the caller's transaction, so a caller can make
// other writes atomic with the append (the inbox). Nothing is visible to
// ReadAll before the caller commits; the wake-up for Changes is sent at
// commit.
//
// Expected versions: Any appends after the current last event; NoStream
// requires an empty stream; StreamExists at least one event; Exact(v) that
// the last event has version v. A failed check returns a
// *eventstore.WrongVersionError and leaves tx usable (the insert runs under
// a savepoint); nothing of this append is written.
//
// Idempotency: when every event ID is already stored in this stream,
// consecutively and in order, at the versions this append would have written
// (Exact(v): v+1..; NoStream: 0..; Any and StreamExists: anywhere), the append
// is a no-op success whose NextExpected is the version of the last of them.
// A partial overlap, or IDs stored elsewhere (another stream, other
// versions), is a *eventstore.WrongVersionError wrapped with a message naming
// the ID: event IDs are unique store-wide, and the caller's re-read and
// re-decide is the right reaction to a decision that does not fit.
//
// Connection failures and timeouts match eventstore.ErrUnavailable.
func (s *EventStore) AppendTx(ctx context.Context, tx pgx.Tx, stream string, expected eventstore.ExpectedVersion, events []eventstore.EventData) (eventstore.AppendResult, error) {
	if stream == "" {
		return eventstore.AppendResult{}, errors.New("postgres event store: append: empty stream id")
	}
	ids, types, datas, metas, err := columns(stream, events)
	if err != nil {
		return eventstore.AppendResult{}, err
	}

	for {
		cur, err := currentVersion(ctx, tx, stream)
		if err != nil {
			return eventstore.AppendResult{}, err
		}
		if !holds(expected, cur) {
			if res, ok, err := idempotent(ctx, tx, stream, expected, ids); err != nil || ok {
				return res, err
			}
			return eventstore.AppendResult{}, &eventstore.WrongVersionError{Stream: stream, Expected: expected, Actual: cur}
		}
		if len(events) == 0 {
			return eventstore.AppendResult{NextExpected: uint64(max(cur, 0))}, nil
		}

		err = insertEvents(ctx, tx, stream, cur+1, ids, types, datas, metas)
		if err == nil {
			return eventstore.AppendResult{NextExpected: uint64(cur + int64(len(events)))}, nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.UniqueViolation {
			return eventstore.AppendResult{}, wrap("append to "+stream, err)
		}
		// A unique violation: someone else wrote these versions or these
		// IDs since we read the version (their commit is visible now, as the
		// violation waited for it). Either it was this very append, retried
		// concurrently, or a lost race.
		if res, ok, err := idempotent(ctx, tx, stream, expected, ids); err != nil || ok {
			return res, err
		}
		actual, verr := currentVersion(ctx, tx, stream)
		if verr != nil {
			actual = -2
		}
		if pgErr.ConstraintName == constraintStreamVersion && (expected.IsAny() || expected.IsStreamExists()) && actual > cur {
			// The condition still holds after the winner's append: append
			// after it. Each retry follows someone else's progress, so
			// this ends; if the version did not move (a snapshot that
			// cannot see the winner), report the conflict instead.
			continue
		}
		wrong := &eventstore.WrongVersionError{Stream: stream, Expected: expected, Actual: actual}
		if pgErr.ConstraintName == constraintEventID {
			return eventstore.AppendResult{}, fmt.Errorf("postgres event store: an event id of this append is stored elsewhere (%s): %w", pgErr.Detail, wrong)
		}
		return eventstore.AppendResult{}, wrong
	}
}

// columns checks events and splits them into the insert's arrays.
func columns(stream string, events []eventstore.EventData) (ids []uuid.UUID, types []string, datas, metas [][]byte, err error) {
	ids = make([]uuid.UUID, len(events))
	types = make([]string, len(events))
	datas = make([][]byte, len(events))
	metas = make([][]byte, len(events))
	seen := make(map[uuid.UUID]bool, len(events))
	for i, e := range events {
		if e.Type == "" {
			return nil, nil, nil, nil, fmt.Errorf("postgres event store: append to %s: event %d has no type", stream, i)
		}
		if seen[e.ID] {
			return nil, nil, nil, nil, fmt.Errorf("postgres event store: append to %s: event id %s appears twice", stream, e.ID)
		}
		seen[e.ID] = true
		ids[i], types[i], datas[i] = e.ID, e.Type, e.Data
		if len(e.Metadata) > 0 {
			metas[i] = e.Metadata
		}
	}
	return ids, types, datas, metas, nil
}

// appendAfterRead is AppendTx with expected eventstore.ExpectFor(read) for a
// caller that has just read the stream's read events inside tx (the
// recorder). Streams only grow and have no gaps, so that expectation holds
// exactly when versions read.. are free: the insert is tried at once, its
// unique constraint judging, without the version query, and savepoint,
// insert and release travel in one round trip. A unique violation (a
// concurrent append won, or these ids are stored) rolls back to the
// savepoint and hands over to AppendTx, which reports the wrong version or
// recognises the idempotent retry exactly as it always does.
func (s *EventStore) appendAfterRead(ctx context.Context, tx pgx.Tx, stream string, read int, events []eventstore.EventData) (eventstore.AppendResult, error) {
	if stream == "" || len(events) == 0 {
		return s.AppendTx(ctx, tx, stream, eventstore.ExpectFor(read), events)
	}
	ids, types, datas, metas, err := columns(stream, events)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	b := &pgx.Batch{}
	b.Queue(`SAVEPOINT onceledger_append`)
	b.Queue(insertEventsSQL, stream, int64(read), uuidArgs(ids), types, datas, metas, NotifyChannel)
	b.Queue(`RELEASE SAVEPOINT onceledger_append`)
	err = tx.SendBatch(ctx, b).Close()
	if err == nil {
		return eventstore.AppendResult{NextExpected: uint64(read + len(events) - 1)}, nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.UniqueViolation {
		return eventstore.AppendResult{}, wrap("append to "+stream, err)
	}
	for _, sql := range []string{`ROLLBACK TO SAVEPOINT onceledger_append`, `RELEASE SAVEPOINT onceledger_append`} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return eventstore.AppendResult{}, wrap("append to "+stream, err)
		}
	}
	return s.AppendTx(ctx, tx, stream, eventstore.ExpectFor(read), events)
}

// holds reports whether expected is satisfied by a stream whose last version
// is cur (-1: no stream).
func holds(expected eventstore.ExpectedVersion, cur int64) bool {
	switch {
	case expected.IsAny():
		return true
	case expected.IsNoStream():
		return cur == -1
	case expected.IsStreamExists():
		return cur >= 0
	}
	v, _ := expected.Exact()
	return v <= math.MaxInt64 && int64(v) == cur
}

func currentVersion(ctx context.Context, q querier, stream string) (int64, error) {
	var cur int64
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), -1) FROM events WHERE stream_id = $1`, stream).Scan(&cur)
	if err != nil {
		return 0, wrap("read version of "+stream, err)
	}
	return cur, nil
}

// insertEventsSQL writes events at versions $2.. and asks for the wake-up.
const insertEventsSQL = `
	WITH ins AS (
		INSERT INTO events (stream_id, version, event_id, type, data, metadata)
		SELECT $1, $2 + e.ord - 1, e.id, e.type, e.data, e.metadata
		FROM unnest($3::uuid[], $4::text[], $5::jsonb[], $6::jsonb[])
			WITH ORDINALITY AS e(id, type, data, metadata, ord)
		ORDER BY e.ord
		RETURNING 1
	)
	SELECT count(*), pg_notify($7, '') FROM ins`

// insertEvents writes the events at versions first.. under a savepoint, so
// a unique violation leaves the caller's transaction usable. The
// pg_notify is delivered by Postgres at commit, and not at all on rollback.
func insertEvents(ctx context.Context, tx pgx.Tx, stream string, first int64, ids []uuid.UUID, types []string, datas, metas [][]byte) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	_, err = sp.Exec(ctx, insertEventsSQL, stream, first, uuidArgs(ids), types, datas, metas, NotifyChannel)
	if err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	return sp.Commit(ctx)
}

// idempotent reports whether ids are already stored in stream, consecutively
// and in order, where an append with expected would have put them.
func idempotent(ctx context.Context, q querier, stream string, expected eventstore.ExpectedVersion, ids []uuid.UUID) (eventstore.AppendResult, bool, error) {
	if len(ids) == 0 {
		return eventstore.AppendResult{}, false, nil
	}
	rows, err := q.Query(ctx, `SELECT event_id, stream_id, version FROM events WHERE event_id = ANY($1)`, uuidArgs(ids))
	if err != nil {
		return eventstore.AppendResult{}, false, wrap("idempotency check on "+stream, err)
	}
	type at struct {
		id      uuid.UUID
		stream  string
		version int64
	}
	stored, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (at, error) {
		var a at
		var id pgtype.UUID
		err := r.Scan(&id, &a.stream, &a.version)
		a.id = id.Bytes
		return a, err
	})
	if err != nil {
		return eventstore.AppendResult{}, false, wrap("idempotency check on "+stream, err)
	}
	found := make(map[uuid.UUID]at, len(stored))
	for _, a := range stored {
		found[a.id] = a
	}
	first, ok := found[ids[0]]
	if !ok || first.stream != stream {
		return eventstore.AppendResult{}, false, nil
	}
	switch v, exact := expected.Exact(); {
	case exact && (v >= math.MaxInt64 || first.version != int64(v)+1):
		return eventstore.AppendResult{}, false, nil
	case expected.IsNoStream() && first.version != 0:
		return eventstore.AppendResult{}, false, nil
	}
	for i, id := range ids {
		a, ok := found[id]
		if !ok || a.stream != stream || a.version != first.version+int64(i) {
			return eventstore.AppendResult{}, false, nil
		}
	}
	return eventstore.AppendResult{NextExpected: uint64(first.version + int64(len(ids)) - 1)}, true, nil
}

const eventColumns = `global_position, tx_id, stream_id, version, event_id, type, data, metadata, recorded_at`

// ReadStream returns the stream's events in version order (empty if the
// stream does not exist). Their Position is their place in the global feed.
func (s *EventStore) ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error) {
	return readStream(ctx, s.pool, stream)
}

// ReadStreamTx is ReadStream inside the caller's transaction (it sees the
// transaction's own uncommitted appends).
func (s *EventStore) ReadStreamTx(ctx context.Context, tx pgx.Tx, stream string) ([]eventstore.RecordedEvent, error) {
	return readStream(ctx, tx, stream)
}

// ReadStreamFromTx is ReadStreamTx of the events from version from on.
func (s *EventStore) ReadStreamFromTx(ctx context.Context, tx pgx.Tx, stream string, from int) ([]eventstore.RecordedEvent, error) {
	return readStreamFrom(ctx, tx, stream, from)
}

func readStream(ctx context.Context, q querier, stream string) ([]eventstore.RecordedEvent, error) {
	return readStreamFrom(ctx, q, stream, 0)
}

func readStreamFrom(ctx context.Context, q querier, stream string, from int) ([]eventstore.RecordedEvent, error) {
	rows, err := q.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE stream_id = $1 AND version >= $2 ORDER BY version`, stream, from)
	if err != nil {
		return nil, wrap("read stream "+stream, err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, wrap("read stream "+stream, err)
	}
	return evs, nil
}

// ReadAll returns up to limit events of the global feed strictly after the
// position, in feed order, only from finished transactions (see EventStore).
func (s *EventStore) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("postgres event store: read all: limit must be positive, got %d", limit)
	}
	return s.tail.read(ctx, after, limit, s.readAll)
}

// readAll is ReadAll's query.
func (s *EventStore) readAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	return s.readFeed(ctx, eventColumns, after, limit)
}

// ReadAllData is ReadAll without the events' metadata (RecordedEvent.Metadata
// is nil): a rebuild's replay uses none of it, and formatting it is nearly
// half of the database's work for the read. It reads past the shared tail:
// a rebuild reads history once, where the projectors read the same tail.
func (s *EventStore) ReadAllData(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("postgres event store: read all: limit must be positive, got %d", limit)
	}
	return s.readFeed(ctx, eventColumnsWithoutMetadata, after, limit)
}

// eventColumnsWithoutMetadata scans as eventColumns, metadata NULL.
var eventColumnsWithoutMetadata = strings.Replace(eventColumns, "metadata", "NULL::jsonb", 1)

// readFeed reads the feed after a position, below the horizon, in feed order.
func (s *EventStore) readFeed(ctx context.Context, columns string, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	commit, prepare := clampPosition(after)
	rows, err := s.pool.Query(ctx, `
		SELECT `+columns+`
		FROM events
		WHERE tx_id < GREATEST((SELECT feed_horizon()), $4)
		  AND (tx_id, global_position) > ($1, $2)
		ORDER BY tx_id, global_position
		LIMIT $3`, commit, prepare, limit, s.floor.Load())
	if err != nil {
		return nil, wrap("read all", err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, wrap("read all", err)
	}
	if len(evs) > 0 {
		s.raiseFloor(int64(evs[len(evs)-1].Position.Commit) + 1)
	}
	return evs, nil
}

// raiseFloor records h as a horizon known safe, if it is larger.
func (s *EventStore) raiseFloor(h int64) {
	for {
		cur := s.floor.Load()
		if h <= cur || s.floor.CompareAndSwap(cur, h) {
			return
		}
	}
}

// AtLeast tells the store that p was returned by a reader of this feed
// (a projection's checkpoint): the horizon was above p.Commit then, so it
// never needs to be below it again. `onceledger verify` uses it so that a
// head read in a fresh process is not below the checkpoints the projectors
// reached (see EventStore, "A monotonic horizon"). Only positions read from
// the feed may be passed: a made-up one would let readers past
// transactions still in progress.
func (s *EventStore) AtLeast(p eventstore.Position) {
	commit, _ := clampPosition(p)
	if commit < math.MaxInt64 {
		s.raiseFloor(commit + 1)
	}
}

// Head is the position of the last event ReadAll can return now.
func (s *EventStore) Head(ctx context.Context) (eventstore.Position, error) {
	var horizon int64
	var commit, prepare *int64
	err := s.pool.QueryRow(ctx, `
		SELECT h.v, e.tx_id, e.global_position
		FROM (SELECT GREATEST(feed_horizon(), $1) AS v) h
		LEFT JOIN LATERAL (
			SELECT tx_id, global_position
			FROM events
			WHERE tx_id < h.v
			ORDER BY tx_id DESC, global_position DESC
			LIMIT 1) e ON true`, s.floor.Load()).Scan(&horizon, &commit, &prepare)
	if err != nil {
		return eventstore.Position{}, wrap("head", err)
	}
	s.raiseFloor(horizon)
	if commit == nil {
		return eventstore.Start, nil
	}
	return eventstore.Position{Commit: uint64(*commit), Prepare: uint64(*prepare)}, nil
}

// clampPosition converts to the bigint columns; no stored value exceeds
// MaxInt64, so a larger position is past everything.
func clampPosition(p eventstore.Position) (int64, int64) {
	if p.Commit > math.MaxInt64 {
		return math.MaxInt64, math.MaxInt64
	}
	if p.Prepare > math.MaxInt64 {
		return int64(p.Commit), math.MaxInt64
	}
	return int64(p.Commit), int64(p.Prepare)
}

func scanEvents(rows pgx.Rows) ([]eventstore.RecordedEvent, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (eventstore.RecordedEvent, error) {
		var r eventRow
		var id pgtype.UUID
		err := row.Scan(&r.globalPosition, &r.txID, &r.streamID, &r.version, &id, &r.typ, &r.data, &r.metadata, &r.recordedAt)
		r.eventID = id.Bytes
		return r.recorded(), err
	})
}

type eventRow struct {
	globalPosition int64
	txID           int64
	streamID       string
	version        int64
	eventID        uuid.UUID
	typ            string
	data           []byte
	metadata       []byte
	recordedAt     time.Time
}

func (r eventRow) recorded() eventstore.RecordedEvent {
	return eventstore.RecordedEvent{
		ID:         r.eventID,
		StreamID:   r.streamID,
		Version:    uint64(r.version),
		Type:       r.typ,
		Data:       r.data,
		Metadata:   r.metadata,
		Position:   eventstore.Position{Commit: uint64(r.txID), Prepare: uint64(r.globalPosition)},
		RecordedAt: r.recordedAt,
	}
}

// uuidArgs passes event ids as pgtype.UUID: pgx encodes a uuid.UUID through
// its driver.Valuer (a string, parsed back per element), which was 7% of a
// settlement import's CPU.
func uuidArgs(ids []uuid.UUID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = pgtype.UUID{Bytes: id, Valid: true}
	}
	return out
}

// wrap adds context and marks unavailability (see markUnavailable).
func wrap(op string, err error) error {
	return fmt.Errorf("postgres event store: %s: %w", op, markUnavailable(err))
}
