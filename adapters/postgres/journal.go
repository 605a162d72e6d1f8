package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Journal is the ingest.Journal of a database that holds both the inbox and
// the events: one unit of work is ONE transaction (inbox row, stream append
// and inbox status commit together), so a delivery is either wholly recorded
// or not at all, and the 2xx goes out only after the commit.
//
// A first arrival costs four round trips: BEGIN; the inbox insert and the
// stream read, pipelined in one batch (Gate); the append (see
// appendAfterRead); COMMIT. Concurrent first arrivals share those four
// round trips and the commit (ingest.BatchJournal, groupcommit.go).
type Journal struct {
	pool   *pgxpool.Pool
	events *EventStore
}

var (
	_ ingest.Journal    = (*Journal)(nil)
	_ ingest.Tx         = journalTx{}
	_ ingest.TailReader = journalTx{}
)

// NewJournal returns the one-transaction journal appending through events,
// which must use the same database as pool.
func NewJournal(pool *pgxpool.Pool, events *EventStore) *Journal {
	return &Journal{pool: pool, events: events}
}

// Atomic implements ingest.Journal: everything commits together.
func (*Journal) Atomic() bool { return true }

// Do implements ingest.Journal: fn runs in one transaction.
func (j *Journal) Do(ctx context.Context, fn func(ingest.Tx) error) error {
	return inTx(ctx, j.pool, func(tx pgx.Tx) error {
		return fn(journalTx{tx: tx, events: j.events})
	})
}

type journalTx struct {
	tx     pgx.Tx
	events *EventStore
}

func (t journalTx) Gate(ctx context.Context, ev delivery.Event, status, read string) (ingest.Gated, error) {
	inserted, history, err := insertInboxAndRead(ctx, t.tx, ev, status, read)
	if err != nil || inserted {
		return ingest.Gated{Inserted: inserted, History: history}, err
	}
	first, err := countRedelivery(ctx, t.tx, ev)
	return ingest.Gated{First: first}, err
}

func (t journalTx) KeepConflict(ctx context.Context, ev delivery.Event) error {
	return keepConflict(ctx, t.tx, ev)
}

func (t journalTx) Load(ctx context.Context, k ingest.InboxKey) (delivery.Event, string, error) {
	return loadInbox(ctx, t.tx, k, true)
}

func (t journalTx) SetStatus(ctx context.Context, k ingest.InboxKey, from, to string) (bool, error) {
	return setStatus(ctx, t.tx, k, from, to)
}

func (t journalTx) ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error) {
	return t.events.ReadStreamTx(ctx, t.tx, stream)
}

// ReadStreamFrom implements ingest.TailReader: a kept fold reads what it lacks.
func (t journalTx) ReadStreamFrom(ctx context.Context, stream string, from int) ([]eventstore.RecordedEvent, error) {
	return t.events.ReadStreamFromTx(ctx, t.tx, stream, from)
}

func (t journalTx) Append(ctx context.Context, stream string, read int, events []eventstore.EventData) error {
	_, err := t.events.appendAfterRead(ctx, t.tx, stream, read, events)
	return err
}

// insertInboxAndRead is the dedup gate: the primary key (provider,
// dedup_key) decides, never a prior SELECT. A concurrent first arrival makes
// the insert wait for that transaction: if it commits, this one sees the
// conflict (0 rows, a duplicate); if it rolls back, this one inserts.
//
// The read of stream read (if any) travels in the same round trip (a
// pipelined batch, run in order after the insert, so it sees what the wait
// let through); a duplicate just does not use it.
func insertInboxAndRead(ctx context.Context, tx pgx.Tx, ev delivery.Event, status, read string) (bool, []eventstore.RecordedEvent, error) {
	normalized, err := delivery.EncodeNormalized(ev)
	if err != nil {
		return false, nil, fmt.Errorf("encode normalized %s: %w", ev.DedupKey, err)
	}
	var stream *string
	if !ev.Ignored() {
		s := ev.StreamID()
		stream = &s
	}
	b := &pgx.Batch{}
	b.Queue(`
		INSERT INTO webhook_inbox (provider, dedup_key, event_type, stream_id, payload_hash, facts_hash, raw_body, normalized, status, applied_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $9 = '`+ingest.StatusApplied+`' THEN now() END)
		ON CONFLICT (provider, dedup_key) DO NOTHING`,
		ev.Provider, ev.DedupKey, ev.Type, stream, ev.PayloadHash, ev.FactsHash(), ev.Raw, normalized, status)
	if read != "" {
		b.Queue(`SELECT `+eventColumns+` FROM events WHERE stream_id = $1 ORDER BY version`, read)
	}
	br := tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	tag, err := br.Exec()
	if err != nil {
		return false, nil, fmt.Errorf("inbox insert %s/%s: %w", ev.Provider, ev.DedupKey, markUnavailable(err))
	}
	var history []eventstore.RecordedEvent
	if read != "" {
		rows, err := br.Query()
		if err == nil {
			history, err = scanEvents(rows)
		}
		if err != nil {
			return false, nil, wrap("read stream "+read, err)
		}
	}
	if err := br.Close(); err != nil {
		return false, nil, fmt.Errorf("inbox insert %s/%s: %w", ev.Provider, ev.DedupKey, markUnavailable(err))
	}
	return tag.RowsAffected() == 1, history, nil
}
