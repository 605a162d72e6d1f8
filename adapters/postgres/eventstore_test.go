package postgres_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/eventstore/eventstoretest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

func TestEventStoreContract(t *testing.T) {
	eventstoretest.Run(t, func(t *testing.T) eventstoretest.Harness {
		pool := pgtest.NewPool(t)
		store := postgres.NewEventStore(pool)
		return eventstoretest.Harness{
			Store: store,
			HoldAppend: func(ctx context.Context, stream string, events []eventstore.EventData) (func() error, error) {
				return holdAppend(t, ctx, pool, store, stream, events)
			},
		}
	})
}

// holdAppend is the adversarial late commit: its transaction takes its xid
// now (as the recorder does when it writes the inbox row first) but inserts
// its events only when commit is called, after the later append committed.
// So the held events end up with the smaller tx_id but the larger
// global_position: a feed ordered by global_position, or read without the
// xmin bound, fails the contract.
func holdAppend(t *testing.T, ctx context.Context, pool *pgxpool.Pool, store *postgres.EventStore, stream string, events []eventstore.EventData) (func() error, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return func() error {
		ctx := context.Background()
		if _, err := store.AppendTx(ctx, tx, stream, eventstore.Any, events); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}, nil
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func events(n int) []eventstore.EventData {
	evs := make([]eventstore.EventData, n)
	for i := range evs {
		evs[i] = eventstore.EventData{ID: uuid.New(), Type: "Tested", Data: []byte(`{"n":1}`)}
	}
	return evs
}

func readAllOurs(t *testing.T, ctx context.Context, s *postgres.EventStore) []eventstore.RecordedEvent {
	t.Helper()
	evs, err := s.ReadAll(ctx, eventstore.Start, 10000)
	require.NoError(t, err)
	return evs
}

// readAllAtLeast polls the feed until it shows n events (or 30 s pass) and
// returns what it shows last. The feed horizon errs low for a moment while
// another database's transaction is not yet attributed to it
// (pg_stat_activity lags behind a fresh xid), so a count that must appear is
// waited for; a count that must NOT be exceeded is read once.
func readAllAtLeast(t *testing.T, ctx context.Context, s *postgres.EventStore, n int) []eventstore.RecordedEvent {
	t.Helper()
	var evs []eventstore.RecordedEvent
	require.Eventually(t, func() bool {
		evs = readAllOurs(t, ctx, s)
		return len(evs) >= n
	}, 30*time.Second, 10*time.Millisecond, "the feed never showed %d events", n)
	return evs
}

// With Any, re-appending ids that are already in the stream is a no-op.
func TestAppendAnyIdempotent(t *testing.T) {
	ctx := testCtx(t)
	s := postgres.NewEventStore(pgtest.NewPool(t))
	evs := events(2)
	_, err := s.Append(ctx, "s-any", eventstore.Any, evs)
	require.NoError(t, err)
	_, err = s.Append(ctx, "s-any", eventstore.Any, events(1))
	require.NoError(t, err)
	res, err := s.Append(ctx, "s-any", eventstore.Any, evs)
	require.NoError(t, err, "Any re-append of stored ids: %v", err)
	assert.EqualValues(t, 1, res.NextExpected, "NextExpected = %d, want 1 (the last re-appended event's version)", res.NextExpected)
	got, _ := s.ReadStream(ctx, "s-any")
	require.Len(t, got, 3, "stream has %d events, want 3", len(got))
	// A partial overlap is not idempotent.
	_, err = s.Append(ctx, "s-any", eventstore.Any, append([]eventstore.EventData{evs[1]}, events(1)...))
	require.ErrorIs(t, err, eventstore.ErrWrongVersion, "partial overlap: err = %v, want ErrWrongVersion", err)
}

// An event id stored in another stream is a wrong-version error naming it,
// and writes nothing.
func TestAppendEventIDElsewhere(t *testing.T) {
	ctx := testCtx(t)
	s := postgres.NewEventStore(pgtest.NewPool(t))
	evs := events(1)
	_, err := s.Append(ctx, "s-one", eventstore.NoStream, evs)
	require.NoError(t, err)
	_, err = s.Append(ctx, "s-two", eventstore.NoStream, append(events(1), evs...))
	var wv *eventstore.WrongVersionError
	require.True(t, errors.As(err, &wv), "err = %v, want *WrongVersionError for s-two at -1", err)
	require.EqualValues(t, "s-two", wv.Stream, "err = %v, want *WrongVersionError for s-two at -1", err)
	require.EqualValues(t, -1, wv.Actual, "err = %v, want *WrongVersionError for s-two at -1", err)
	assert.True(t, strings.Contains(err.Error(), evs[0].ID.String()), "error %q does not name the duplicate id", err)
	got, _ := s.ReadStream(ctx, "s-two")
	require.Empty(t, got, "s-two has events after a failed append")
	// Duplicate ids inside one append are rejected before touching the database.
	_, err = s.Append(ctx, "s-three", eventstore.Any, []eventstore.EventData{evs[0], evs[0]})
	require.Error(t, err, "append with a repeated id succeeded")
}

// Two identical appends racing (a provider retry hitting two instances):
// both succeed, the events are stored once.
func TestConcurrentIdenticalAppends(t *testing.T) {
	ctx := testCtx(t)
	s := postgres.NewEventStore(pgtest.NewPool(t))
	for round := 0; round < 10; round++ {
		stream := "s-twin-" + uuid.NewString()
		evs := events(3)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.Append(ctx, stream, eventstore.NoStream, evs)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "round %d appender %d: %v", round, i, err)
		}
		got, _ := s.ReadStream(ctx, stream)
		require.Len(t, got, 3, "round %d: stream has %d events, want 3", round, len(got))
	}
}

// Concurrent Any appends all land, without gaps, each once.
func TestConcurrentAnyAppends(t *testing.T) {
	ctx := testCtx(t)
	s := postgres.NewEventStore(pgtest.NewPool(t))
	const writers = 32
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Append(ctx, "s-any-race", eventstore.Any, events(2))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "writer %d: %v", i, err)
	}
	got, err := s.ReadStream(ctx, "s-any-race")
	require.NoError(t, err)
	require.Len(t, got, 2*writers, "stream has %d events, want %d", len(got), 2*writers)
	for i, e := range got {
		require.EqualValues(t, uint64(i), e.Version, "event %d has version %d", i, e.Version)
	}
}

// A failed expectation inside a caller's transaction leaves it usable, and
// the caller's other writes commit atomically with a later append.
func TestAppendTxKeepsTransactionUsable(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	s := postgres.NewEventStore(pool)
	_, err := s.Append(ctx, "s-tx", eventstore.NoStream, events(1))
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	// A stale expectation (caught before writing) and an id stored
	// elsewhere (caught by the unique constraint, under the savepoint).
	_, err = s.AppendTx(ctx, tx, "s-tx", eventstore.Exact(5), events(1))
	require.ErrorIs(t, err, eventstore.ErrWrongVersion, "stale exact: %v", err)
	stored, _ := s.ReadStream(ctx, "s-tx")
	_, err = s.AppendTx(ctx, tx, "s-other", eventstore.NoStream, []eventstore.EventData{{ID: stored[0].ID, Type: "T", Data: []byte(`{}`)}})
	require.ErrorIs(t, err, eventstore.ErrWrongVersion, "id stored elsewhere")
	res, err := s.AppendTx(ctx, tx, "s-tx", eventstore.Exact(0), events(2))
	require.NoError(t, err, "append after failures in the same transaction: %v", err)
	assert.EqualValues(t, 2, res.NextExpected, "NextExpected = %d, want 2", res.NextExpected)
	inTx, err := s.ReadStreamTx(ctx, tx, "s-tx")
	require.NoError(t, err, "ReadStreamTx sees %d events (%v), want 3", len(inTx), err)
	require.Len(t, inTx, 3, "ReadStreamTx sees %d events (%v), want 3", len(inTx), err)
	outside, _ := s.ReadStream(ctx, "s-tx")
	require.Len(t, outside, 1, "uncommitted append visible outside: %d events", len(outside))
	require.NoError(t, tx.Commit(ctx))
	got, _ := s.ReadStream(ctx, "s-tx")
	require.Len(t, got, 3, "after commit: %d events, want 3", len(got))
}

// The plain late commit (the contract harness covers the early-xid one): a
// transaction inserts its events, stays open while a later one commits; the
// feed shows neither until it ends, then both in xid order.
func TestLateCommitHeldInsert(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	s := postgres.NewEventStore(pool)

	held, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer held.Rollback(context.Background())
	heldEvs := events(2)
	_, err = s.AppendTx(ctx, held, "s-held", eventstore.NoStream, heldEvs)
	require.NoError(t, err)
	var xid int64
	require.NoError(t, held.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid))
	laterEvs := events(1)
	_, err = s.Append(ctx, "s-later", eventstore.NoStream, laterEvs)
	require.NoError(t, err)
	require.Empty(t, readAllOurs(t, ctx, s), "the feed shows events while an older transaction is open")
	head, err := s.Head(ctx)
	require.NoError(t, err, "head while held = %v, %v; want Start", head, err)
	require.EqualValues(t, eventstore.Start, head, "head while held = %v, %v; want Start", head, err)
	require.NoError(t, held.Commit(ctx))
	var got []eventstore.RecordedEvent
	for deadline := time.Now().Add(20 * time.Second); len(got) < 3 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = readAllOurs(t, ctx, s)
	}
	require.Len(t, got, 3, "feed = %v, want held (2) then later", got)
	require.EqualValues(t, heldEvs[0].ID, got[0].ID, "feed = %v, want held (2) then later", got)
	require.EqualValues(t, heldEvs[1].ID, got[1].ID, "feed = %v, want held (2) then later", got)
	require.EqualValues(t, laterEvs[0].ID, got[2].ID, "feed = %v, want held (2) then later", got)
	assert.EqualValues(t, uint64(xid), got[0].Position.Commit, "held events' Commit = %d, %d, want the transaction id %d", got[0].Position.Commit, got[1].Position.Commit, xid)
	assert.EqualValues(t, uint64(xid), got[1].Position.Commit, "held events' Commit = %d, %d, want the transaction id %d", got[0].Position.Commit, got[1].Position.Commit, xid)
	head, err = s.Head(ctx)
	assert.NoError(t, err, "head = %v (%v), want %v", head, err, got[2].Position)
	assert.EqualValues(t, got[2].Position, head, "head = %v (%v), want %v", head, err, got[2].Position)
}

func TestUnavailable(t *testing.T) {
	// Nothing listens on this port: the address is taken from a listener we
	// close again.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=2")
	require.NoError(t, err)
	defer pool.Close()
	s := postgres.NewEventStore(pool)
	ctx := testCtx(t)
	checks := map[string]error{}
	_, checks["append"] = s.Append(ctx, "s", eventstore.Any, events(1))
	_, checks["read stream"] = s.ReadStream(ctx, "s")
	_, checks["read all"] = s.ReadAll(ctx, eventstore.Start, 10)
	_, checks["head"] = s.Head(ctx)
	_, checks["changes"] = s.Changes(ctx)
	for op, err := range checks {
		assert.ErrorIs(t, err, eventstore.ErrUnavailable, "%s on a dead server: err = %v, want ErrUnavailable", op, err)
	}

	// A deadline that passes is unavailability too.
	live := postgres.NewEventStore(pgtest.NewPool(t))
	dctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-dctx.Done()
	_, err = live.Append(dctx, "s", eventstore.Any, events(1))
	assert.ErrorIs(t, err, eventstore.ErrUnavailable, "append past its deadline: err = %v, want ErrUnavailable", err)
}

// An administrator terminating the connection mid-transaction is
// unavailability (57P01), not an opaque error.
func TestTerminatedConnectionIsUnavailable(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	s := postgres.NewEventStore(pool)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background())
	var pid int
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	_, err = pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
	require.NoError(t, err)
	_, err = s.AppendTx(ctx, tx, "s", eventstore.Any, events(1))
	require.ErrorIs(t, err, eventstore.ErrUnavailable, "append on a terminated connection: err = %v, want ErrUnavailable", err)
}

// The listener reconnects after its connection is killed, signals that it
// may have missed something, and keeps delivering wake-ups.
func TestChangesReconnects(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	s := postgres.NewEventStore(pool)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	ch, err := s.Changes(lctx)
	require.NoError(t, err)
	tag, err := pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, postgres.ListenerApplicationName)
	require.NoError(t, err, "terminate listener: %v (%d rows)", err, tag.RowsAffected())
	require.EqualValues(t, 1, tag.RowsAffected(), "terminate listener: %v (%d rows)", err, tag.RowsAffected())
	select {
	case <-ch: // the post-reconnect wake-up
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no wake-up after the listener reconnected")
	}
	waitListening(t, ctx, pool)
	_, err = s.Append(ctx, "s-notify", eventstore.Any, events(1))
	require.NoError(t, err)
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no wake-up for an append after the reconnect")
	}
	stop()
	for range ch {
	}
}

func waitListening(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND query LIKE 'LISTEN%'`,
			postgres.ListenerApplicationName).Scan(&n)
		require.NoError(t, err)
		if n == 1 {
			return
		}
	}
	require.FailNow(t, "listener did not come back")
}

// Metadata and data survive the round trip; nil metadata stays NULL.
func TestMetadataRoundTrip(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	s := postgres.NewEventStore(pool)
	evs := events(2)
	evs[0].Metadata = []byte(`{"k":"v"}`)
	_, err := s.Append(ctx, "s-meta", eventstore.NoStream, evs)
	require.NoError(t, err)
	var nulls int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE metadata IS NULL`).Scan(&nulls))
	require.EqualValues(t, 1, nulls, "%d events with NULL metadata, want 1", nulls)
	got, _ := s.ReadStream(ctx, "s-meta")
	require.Len(t, got, 2)
	assert.Equal(t, `{"k": "v"}`, string(got[0].Metadata), "jsonb's rendering of the metadata")
	assert.Nil(t, got[1].Metadata)
}

// TestOtherDatabasesDoNotHoldTheFeedBack: the visibility horizon is narrowed
// to this database (feed_horizon), so a long write transaction in another
// database of the same server does not stall this feed — while one in this
// database still does (the late-commit rule).
func TestOtherDatabasesDoNotHoldTheFeedBack(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	other := pgtest.NewPool(t) // another database on the same server
	s := postgres.NewEventStore(pool)

	foreign, err := other.Begin(ctx)
	require.NoError(t, err)
	defer foreign.Rollback(context.Background())
	var foreignXID int64
	require.NoError(t, foreign.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&foreignXID))

	evs := events(1)
	_, err = s.Append(ctx, "s-after-foreign", eventstore.NoStream, evs)
	require.NoError(t, err)
	// Waited for: the horizon errs low for a moment while the foreign xid
	// is not yet attributed to its database (readAllAtLeast); a foreign
	// transaction that held it back for good would time out here.
	got := readAllAtLeast(t, ctx, s, 1)
	require.Len(t, got, 1, "feed = %v while another database's transaction %d is open; want the committed event", got, foreignXID)
	require.EqualValues(t, evs[0].ID, got[0].ID, "feed = %v while another database's transaction %d is open; want the committed event", got, foreignXID)
	require.False(t, got[0].Position.Commit <= uint64(foreignXID), "test premise: our event's transaction %d should be younger than the foreign one %d", got[0].Position.Commit, foreignXID)

	// A transaction of this database still holds the feed back.
	held, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer held.Rollback(context.Background())
	_, err = held.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	later := events(1)
	_, err = s.Append(ctx, "s-after-own", eventstore.NoStream, later)
	require.NoError(t, err)
	got = readAllOurs(t, ctx, s)
	require.Len(t, got, 1, "feed shows %d events while a transaction of this database is open; want 1", len(got))
}

// ReadAllData is ReadAll without the metadata: same events, same order,
// same positions and data (a rebuild's replay reads it).
func TestReadAllDataIsReadAllWithoutMetadata(t *testing.T) {
	ctx := testCtx(t)
	s := postgres.NewEventStore(pgtest.NewPool(t))
	evs := events(7)
	for i := range evs {
		evs[i].Metadata = []byte(`{"provider": "test"}`)
	}
	_, err := s.Append(ctx, "s-1", eventstore.NoStream, evs[:4])
	require.NoError(t, err)
	_, err = s.Append(ctx, "s-2", eventstore.NoStream, evs[4:])
	require.NoError(t, err)
	all := readAllAtLeast(t, ctx, s, 7)
	data, err := s.ReadAllData(ctx, eventstore.Start, 10000)
	require.NoError(t, err)
	require.Len(t, data, len(all))
	for i := range all {
		assert.NotEmpty(t, all[i].Metadata)
		assert.Nil(t, data[i].Metadata)
		all[i].Metadata = nil
	}
	assert.Equal(t, all, data)
	// And from a position, with a limit, as ReadAll.
	rest, err := s.ReadAllData(ctx, all[2].Position, 3)
	require.NoError(t, err)
	assert.Equal(t, all[3:6], rest)
}
