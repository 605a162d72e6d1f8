package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// The SQL of group commit (ingest.BatchJournal): several first arrivals in
// ONE transaction. A shared unit costs the single path's four round trips
// (BEGIN; inbox insert pipelined with the stream read; the append under a
// savepoint; COMMIT) for the whole batch instead of per delivery.
//
// Lock order: rows are inserted in (provider, dedup_key) order and events in
// stream order, so two shared units (other instances, or this one's units in
// flight together) wait for each other in one direction and do not
// deadlock. Should one happen anyway (a single-path transaction in between),
// Postgres breaks it, the unit rolls back, and ingest records its deliveries
// alone.

var (
	_ ingest.BatchJournal = (*Journal)(nil)
	_ ingest.BatchTx      = (*batchTx)(nil)
)

// DoBatch implements ingest.BatchJournal: fn runs in one transaction.
func (j *Journal) DoBatch(ctx context.Context, fn func(ingest.BatchTx) error) error {
	return inTx(ctx, j.pool, func(tx pgx.Tx) error {
		t := &batchTx{tx: tx, events: j.events}
		return fn(t)
	})
}

type batchTx struct {
	tx     pgx.Tx
	events *EventStore
}

// gateAllSQL is the dedup gate of many deliveries in one statement: the
// primary key judges each row as in insertInboxAndRead (a key another
// transaction is inserting makes this one wait for it), and RETURNING names
// the rows this statement inserted, the first arrivals. A row counts its
// delivery and the twins that queued with it (ingest.GateItem.Twins): they
// need no count of their own after the commit.
const gateAllSQL = `
	INSERT INTO webhook_inbox (provider, dedup_key, event_type, stream_id, payload_hash, facts_hash, raw_body, normalized, status, applied_at, delivery_count)
	SELECT i.provider, i.dedup_key, i.event_type, i.stream_id, i.payload_hash, i.facts_hash, i.raw_body, i.normalized, i.status,
	       CASE WHEN i.status = '` + ingest.StatusApplied + `' THEN now() END, i.n
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::jsonb[], $9::text[], $10::int[])
		WITH ORDINALITY AS i(provider, dedup_key, event_type, stream_id, payload_hash, facts_hash, raw_body, normalized, status, n, ord)
	ORDER BY i.ord
	ON CONFLICT (provider, dedup_key) DO NOTHING
	RETURNING provider, dedup_key`

// countAllSQL counts, right after the gate, the redeliveries that are plain
// duplicates of a row on record (the row is not "received" and holds the
// same facts: the single path sees to any other) and returns those rows as
// they stand after it. The rows the gate inserted are this transaction's
// own (xmin), and not redeliveries. Before, a read of every key followed the
// gate and a counting update the decisions: one statement fewer per unit.
// Not ON CONFLICT DO UPDATE … WHERE in the gate itself: that locks the rows
// it does not update too, and a redelivery sent alone (a conflict) then
// waited for the whole unit to commit before it could count itself.
const countAllSQL = `
	UPDATE webhook_inbox w
	SET delivery_count = w.delivery_count + k.n, last_seen_at = now()
	FROM unnest($1::text[], $2::text[], $3::text[], $4::int[]) AS k(provider, dedup_key, facts_hash, n)
	WHERE w.provider = k.provider AND w.dedup_key = k.dedup_key
	  AND w.status <> '` + ingest.StatusReceived + `' AND w.facts_hash = k.facts_hash
	  AND w.xmin <> pg_current_xact_id()::xid
	RETURNING w.provider, w.dedup_key, w.status, w.payload_hash, w.stream_id`

// genericPlansSQL makes the rest of a shared unit run on plans made once
// per connection. serve's connections plan every execution
// (plan_cache_mode=force_custom_plan, cmd/onceledger/app: plans made on an
// empty database turned into sequential scans as it grew), and a unit's
// statements cost 60–70 µs each to plan: at 1,000 deliveries/s, where a
// unit holds one or two deliveries, planning was a third of the
// database's time per delivery (pg_stat_statements, docs/benchmarks.md). Every
// statement of a unit reads by key (the inbox's primary key, a stream's
// (stream_id, version), an event id), so its plan does not depend on the
// tables' size: with sequential scans priced out while the plan is made,
// a generic plan made on an empty database is the index plan it needs
// later (a plan is not remade when a setting changes). SET LOCAL: the
// connection's own settings are back at the commit or rollback.
const genericPlansSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`

// GateAll implements ingest.BatchTx: the multi-row insert, the count of
// the plain redeliveries and the read of every stream named travel in one
// round trip (a pipelined batch, run in order, so the count and the read
// see what the insert's waits let through).
func (t *batchTx) GateAll(ctx context.Context, items []ingest.GateItem) ([]ingest.Gated, error) {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := items[a].Event, items[b].Event
		return cmp.Or(cmp.Compare(x.Provider, y.Provider), cmp.Compare(x.DedupKey, y.DedupKey))
	})
	n := len(items)
	c, err := gateColumnsOf(items, order)
	if err != nil {
		return nil, err
	}
	provs, keys, facts, counts, reads, from, itemFacts := c.provs, c.keys, c.facts, c.counts, c.reads, c.from, c.itemFacts
	b := &pgx.Batch{}
	b.Queue(genericPlansSQL)
	b.Queue(gateAllSQL, provs, keys, c.types, c.streams, c.hashes, facts, c.raws, c.norms, c.statuses, counts)
	b.Queue(countAllSQL, provs, keys, facts, counts)
	if len(reads) > 0 {
		// One index lookup per stream, whatever the statistics say: with
		// "stream_id = ANY($1)" and no statistics yet (a new database
		// growing faster than autovacuum analyzes it) Postgres guesses that
		// 64 streams are a third of the table, and reads all of it.
		// A stream with a kept fold is read from its version on only: the
		// read costs the events appended since, not the stream.
		slices.Sort(reads)
		reads = slices.Compact(reads)
		froms := make([]int64, len(reads))
		for i, r := range reads {
			froms[i] = from[r]
		}
		b.Queue(`
			SELECT e.* FROM unnest($1::text[], $2::bigint[]) AS s(stream_id, from_version)
			CROSS JOIN LATERAL (
				SELECT `+eventColumns+` FROM events WHERE stream_id = s.stream_id AND version >= s.from_version OFFSET 0
			) e
			ORDER BY e.stream_id, e.version`, reads, froms)
	}
	br := t.tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	if _, err := br.Exec(); err != nil {
		return nil, fmt.Errorf("shared unit: settings: %w", markUnavailable(err))
	}
	rows, _ := br.Query()
	gated := make(map[ingest.InboxKey]ingest.Gated, n)
	var k ingest.InboxKey
	_, err = pgx.ForEachRow(rows, []any{&k.Provider, &k.DedupKey}, func() error {
		gated[k] = ingest.Gated{Inserted: true}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("shared inbox insert of %d: %w", n, markUnavailable(err))
	}
	rows, _ = br.Query()
	var (
		first  ingest.Stored
		stream *string
	)
	_, err = pgx.ForEachRow(rows, []any{&k.Provider, &k.DedupKey, &first.Status, &first.PayloadHash, &stream}, func() error {
		first.StreamID = ""
		if stream != nil {
			first.StreamID = *stream
		}
		gated[k] = ingest.Gated{First: first}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("shared inbox insert of %d: count the redeliveries: %w", n, markUnavailable(err))
	}
	histories := make(map[string][]eventstore.RecordedEvent)
	if len(reads) > 0 {
		rows, _ := br.Query()
		evs, err := scanEvents(rows)
		if err != nil {
			return nil, wrap(fmt.Sprintf("read %d streams", len(reads)), err)
		}
		for _, e := range evs {
			histories[e.StreamID] = append(histories[e.StreamID], e)
		}
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("shared inbox insert of %d: %w", n, markUnavailable(err))
	}
	out := make([]ingest.Gated, n)
	for i, it := range items {
		g, ok := gated[ingest.InboxKey{Provider: it.Event.Provider, DedupKey: it.Event.DedupKey}]
		switch {
		case !ok:
			// First.Status "": the single path sees to it
		case g.Inserted:
			out[i] = ingest.Gated{Inserted: true, History: histories[it.Read]}
		default:
			g.First.FactsHash = itemFacts[i] // equal: the statement counted it only then
			out[i] = g
		}
	}
	return out, nil
}

// gateColumns are the gate's arrays, in key order (order), and what the
// answer needs by item.
type gateColumns struct {
	provs, keys, types, hashes, facts, statuses []string
	streams                                     []*string
	raws, norms                                 [][]byte
	counts                                      []int32 // the arrivals each row counts: the delivery and its twins
	reads                                       []string
	from                                        map[string]int64 // the first version to read of each stream (a kept fold's length)
	itemFacts                                   []string         // by item
}

func gateColumnsOf(items []ingest.GateItem, order []int) (gateColumns, error) {
	n := len(items)
	c := gateColumns{provs: make([]string, n), keys: make([]string, n), types: make([]string, n), hashes: make([]string, n),
		facts: make([]string, n), statuses: make([]string, n), streams: make([]*string, n), raws: make([][]byte, n),
		norms: make([][]byte, n), counts: make([]int32, n), from: make(map[string]int64), itemFacts: make([]string, n)}
	for o, i := range order {
		ev := items[i].Event
		normalized, err := delivery.EncodeNormalized(ev)
		if err != nil {
			return c, fmt.Errorf("encode normalized %s: %w", ev.DedupKey, err)
		}
		f := items[i].Facts
		if f == "" {
			f = ev.FactsHash()
		}
		c.provs[o], c.keys[o], c.types[o], c.hashes[o], c.facts[o], c.statuses[o] = ev.Provider, ev.DedupKey, ev.Type, ev.PayloadHash, f, items[i].Status
		c.counts[o] = int32(1 + items[i].Twins)
		c.itemFacts[i] = f
		c.raws[o], c.norms[o] = ev.Raw, normalized
		if !ev.Ignored() {
			s := ev.StreamID()
			c.streams[o] = &s
		}
		if items[i].Read != "" {
			c.reads = append(c.reads, items[i].Read) // an import set names a stream once per line of it
			c.from[items[i].Read] = int64(items[i].From)
		}
	}
	return c, nil
}

// AppendAll implements ingest.BatchTx: every append in one multi-row insert
// under a savepoint (savepoint, insert and release in one round trip), each
// at the versions after what its decision read; the unique constraints judge
// as in appendAfterRead. A unique violation rolls back to the savepoint;
// the appends whose stream has moved past their read, or whose event ids are
// stored, are left out (after the violation waited for the winner, its rows
// are visible) and the rest is tried again.
func (t *batchTx) AppendAll(ctx context.Context, appends []ingest.BatchAppend) ([]int, error) {
	left := make([]int, len(appends))
	for i := range left {
		left[i] = i
	}
	slices.SortFunc(left, func(a, b int) int { return cmp.Compare(appends[a].Stream, appends[b].Stream) })
	var rejected []int
	for len(left) > 0 {
		err := t.insertAll(ctx, appends, left)
		if err == nil {
			return rejected, nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.UniqueViolation {
			return nil, wrap(fmt.Sprintf("shared append of %d", len(left)), err)
		}
		// No arguments: the simple protocol, one round trip, and nothing to
		// prepare in the aborted transaction.
		if _, err := t.tx.Exec(ctx, `ROLLBACK TO SAVEPOINT onceledger_batch; RELEASE SAVEPOINT onceledger_batch`); err != nil {
			return nil, wrap("shared append: rollback to savepoint", err)
		}
		moved, err := t.moved(ctx, appends, left)
		if err != nil {
			return nil, err
		}
		if len(moved) == 0 {
			// Nothing visible explains the violation: record them all alone
			// rather than guess.
			return append(rejected, left...), nil
		}
		rejected = append(rejected, moved...)
		left = slices.DeleteFunc(left, func(i int) bool { return slices.Contains(moved, i) })
	}
	return rejected, nil
}

// insertAll writes the events of appends[left...] in one statement.
func (t *batchTx) insertAll(ctx context.Context, appends []ingest.BatchAppend, left []int) error {
	var streams []string
	var versions []int64
	var ids []uuid.UUID
	var types []string
	var datas, metas [][]byte
	for _, i := range left {
		a := appends[i]
		ids0, types0, datas0, metas0, err := columns(a.Stream, a.Events)
		if err != nil {
			return err
		}
		for n := range ids0 {
			streams = append(streams, a.Stream)
			versions = append(versions, int64(a.Read+n))
		}
		ids, types = append(ids, ids0...), append(types, types0...)
		datas, metas = append(datas, datas0...), append(metas, metas0...)
	}
	b := &pgx.Batch{}
	b.Queue(`SAVEPOINT onceledger_batch`)
	b.Queue(insertAllSQL, streams, versions, uuidArgs(ids), types, datas, metas, NotifyChannel)
	b.Queue(`RELEASE SAVEPOINT onceledger_batch`)
	return t.tx.SendBatch(ctx, b).Close()
}

// insertAllSQL is insertEventsSQL for many streams: each row carries its
// stream and version.
const insertAllSQL = `
	WITH ins AS (
		INSERT INTO events (stream_id, version, event_id, type, data, metadata)
		SELECT e.stream_id, e.version, e.id, e.type, e.data, e.metadata
		FROM unnest($1::text[], $2::bigint[], $3::uuid[], $4::text[], $5::jsonb[], $6::jsonb[])
			WITH ORDINALITY AS e(stream_id, version, id, type, data, metadata, ord)
		ORDER BY e.ord
		RETURNING 1
	)
	SELECT count(*), pg_notify($7, '') FROM ins`

// moved returns the appends of left that cannot be made: their stream has
// an event at or past their read, or one of their event ids is stored.
func (t *batchTx) moved(ctx context.Context, appends []ingest.BatchAppend, left []int) ([]int, error) {
	var idx, evIdx []int64
	var streams []string
	var reads []int64
	var ids []uuid.UUID
	for _, i := range left {
		a := appends[i]
		idx, streams, reads = append(idx, int64(i)), append(streams, a.Stream), append(reads, int64(a.Read))
		for _, e := range a.Events {
			evIdx, ids = append(evIdx, int64(i)), append(ids, e.ID)
		}
	}
	rows, err := t.tx.Query(ctx, `
		SELECT a.i FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS a(i, stream_id, read)
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.stream_id = a.stream_id AND e.version >= a.read)
		UNION
		SELECT x.i FROM unnest($4::bigint[], $5::uuid[]) AS x(i, id)
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.event_id = x.id)`, idx, streams, reads, evIdx, uuidArgs(ids))
	if err != nil {
		return nil, wrap("shared append: find the moved streams", err)
	}
	moved, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (int, error) {
		var i int64
		err := r.Scan(&i)
		return int(i), err
	})
	if err != nil {
		return nil, wrap("shared append: find the moved streams", err)
	}
	return moved, nil
}

// Withdraw implements ingest.BatchTx: the rows were inserted by this
// transaction, so deleting them leaves no trace after the commit, and a
// transaction waiting on one of these keys then inserts it as a first
// arrival.
func (t *batchTx) Withdraw(ctx context.Context, keys []ingest.InboxKey) error {
	provs, dedups := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		provs[i], dedups[i] = k.Provider, k.DedupKey
	}
	_, err := t.tx.Exec(ctx, `
		DELETE FROM webhook_inbox w
		USING unnest($1::text[], $2::text[]) AS k(provider, dedup_key)
		WHERE w.provider = k.provider AND w.dedup_key = k.dedup_key`, provs, dedups)
	if err != nil {
		return fmt.Errorf("withdraw %d inbox rows from a shared unit: %w", len(keys), markUnavailable(err))
	}
	return nil
}

// CountTwins implements ingest.BatchJournal: one statement, its own
// transaction, committed when Exec returns. Rows are updated in key order,
// as the gate inserts them, so two counts do not deadlock.
func (j *Journal) CountTwins(ctx context.Context, keys []ingest.InboxKey, n []int) error {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(keys[a].Provider, keys[b].Provider), cmp.Compare(keys[a].DedupKey, keys[b].DedupKey))
	})
	provs, dedups, counts := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	for o, i := range order {
		provs[o], dedups[o], counts[o] = keys[i].Provider, keys[i].DedupKey, int64(n[i])
	}
	_, err := j.pool.Exec(ctx, `
		UPDATE webhook_inbox w
		SET delivery_count = w.delivery_count + k.n, last_seen_at = now()
		FROM unnest($1::text[], $2::text[], $3::bigint[]) AS k(provider, dedup_key, n)
		WHERE w.provider = k.provider AND w.dedup_key = k.dedup_key`, provs, dedups, counts)
	if err != nil {
		return fmt.Errorf("count %d twins' deliveries: %w", len(keys), markUnavailable(err))
	}
	return nil
}
