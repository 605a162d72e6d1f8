package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Recorder is the ingestion unit of work on Postgres: inbox row, stream
// append and inbox status commit in ONE transaction, so a delivery is either
// wholly recorded or not at all, and the 2xx goes out only after the commit.
type Recorder struct {
	pool   *pgxpool.Pool
	events *EventStore
}

var _ ingest.Recorder = (*Recorder)(nil)

// NewRecorder returns a Recorder appending through events (which must use the
// same database).
func NewRecorder(pool *pgxpool.Pool, events *EventStore) *Recorder {
	return &Recorder{pool: pool, events: events}
}

// Inbox statuses (webhook_inbox.status).
const (
	StatusReceived   = ingest.StatusReceived   // stored, facts not yet in the stream (EventStoreDB mode, in flight)
	StatusApplied    = ingest.StatusApplied    // facts recorded in the stream
	StatusIgnored    = ingest.StatusIgnored    // type not handled; kept for audit
	StatusUnverified = ingest.StatusUnverified // PayPal IPN waiting for its postback
	StatusInvalid    = ingest.StatusInvalid    // PayPal IPN answered INVALID: never posted
)

// Record implements ingest.Recorder.
//
// A first arrival costs four round trips: BEGIN; the inbox insert and the
// stream read, pipelined in one batch; the append (see appendAfterRead);
// COMMIT. The inbox row is written with its final status at once: nothing
// can see it before the commit, and if anything after the insert fails the
// whole transaction rolls back with it.
func (r *Recorder) Record(ctx context.Context, ev delivery.Event, d ingest.Decider) (ingest.Result, error) {
	var res ingest.Result
	err := inTx(ctx, r.pool, func(tx pgx.Tx) error {
		status := StatusApplied
		if ev.Ignored() {
			status = StatusIgnored
		}
		inserted, history, err := insertInboxAndRead(ctx, tx, ev, status)
		if err != nil {
			return err
		}
		if !inserted {
			res, err = r.redelivered(ctx, tx, ev, d)
			return err
		}
		if ev.Ignored() {
			res = ingest.Result{Outcome: ingest.Ignored}
			return nil
		}
		res, err = r.decideAndAppend(ctx, tx, ev, d, history)
		return err
	})
	if err != nil {
		return ingest.Result{}, err
	}
	return res, nil
}

// apply decides and appends a delivery whose inbox row is on record inside
// tx and marks it applied (Redrive: the row was stored earlier).
func (r *Recorder) apply(ctx context.Context, tx pgx.Tx, ev delivery.Event, d ingest.Decider) (ingest.Result, error) {
	history, err := r.events.ReadStreamTx(ctx, tx, ev.StreamID())
	if err != nil {
		return ingest.Result{}, err
	}
	res, err := r.decideAndAppend(ctx, tx, ev, d, history)
	if err != nil {
		return ingest.Result{}, err
	}
	if _, err := tx.Exec(ctx, `
		UPDATE webhook_inbox SET status = $3, applied_at = now()
		WHERE provider = $1 AND dedup_key = $2`, ev.Provider, ev.DedupKey, StatusApplied); err != nil {
		return ingest.Result{}, fmt.Errorf("mark %s applied: %w", ev.DedupKey, classify(err))
	}
	return res, nil
}

// decideAndAppend decides ev on history, the stream as read in tx, and
// appends the decision after it.
func (r *Recorder) decideAndAppend(ctx context.Context, tx pgx.Tx, ev delivery.Event, d ingest.Decider, history []eventstore.RecordedEvent) (ingest.Result, error) {
	stream := ev.StreamID()
	decided, err := d.Decide(history, ev)
	if err != nil {
		return ingest.Result{}, err
	}
	if len(decided) > 0 {
		if _, err := r.events.appendAfterRead(ctx, tx, stream, len(history), decided); err != nil {
			return ingest.Result{}, err
		}
	}
	return ingest.Result{Outcome: ingest.Accepted, StreamID: stream, Appended: len(decided)}, nil
}

// redelivered handles a dedup key that is on record: count the delivery and,
// when the payload differs, keep it and record the conflict as a
// reconciliation fact instead of applying it.
func (r *Recorder) redelivered(ctx context.Context, tx pgx.Tx, ev delivery.Event, d ingest.Decider) (ingest.Result, error) {
	first, err := countRedelivery(ctx, tx, ev)
	if err != nil {
		return ingest.Result{}, err
	}
	res, stream := ingest.Redelivery(first, ev)
	if stream == "" {
		return res, nil
	}
	history, err := r.events.ReadStreamTx(ctx, tx, stream)
	if err != nil {
		return ingest.Result{}, err
	}
	decided, err := d.Conflict(history, ev, first.PayloadHash)
	if err != nil {
		return ingest.Result{}, err
	}
	if len(decided) > 0 {
		if _, err := r.events.appendAfterRead(ctx, tx, stream, len(history), decided); err != nil {
			return ingest.Result{}, err
		}
		res.Appended = len(decided)
	}
	return res, nil
}

// insertInboxAndRead is the dedup gate: the primary key (provider,
// dedup_key) decides, never a prior SELECT. A concurrent first arrival makes
// the insert wait for that transaction: if it commits, this one sees the
// conflict (0 rows, a duplicate); if it rolls back, this one inserts.
//
// The read of the delivery's stream travels in the same round trip (a
// pipelined batch, run in order after the insert, so it sees what the wait
// let through); a duplicate just does not use it.
func insertInboxAndRead(ctx context.Context, tx pgx.Tx, ev delivery.Event, status string) (bool, []eventstore.RecordedEvent, error) {
	normalized, err := json.Marshal(encodeNormalized(ev))
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
		INSERT INTO webhook_inbox (provider, dedup_key, event_type, stream_id, payload_hash, raw_body, normalized, status, applied_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CASE WHEN $8 = '`+StatusApplied+`' THEN now() END)
		ON CONFLICT (provider, dedup_key) DO NOTHING`,
		ev.Provider, ev.DedupKey, ev.Type, stream, ev.PayloadHash, ev.Raw, normalized, status)
	if stream != nil {
		b.Queue(`SELECT `+eventColumns+` FROM events WHERE stream_id = $1 ORDER BY version`, *stream)
	}
	br := tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	tag, err := br.Exec()
	if err != nil {
		return false, nil, fmt.Errorf("inbox insert %s/%s: %w", ev.Provider, ev.DedupKey, classify(err))
	}
	var history []eventstore.RecordedEvent
	if stream != nil {
		rows, err := br.Query()
		if err == nil {
			history, err = scanEvents(rows)
		}
		if err != nil {
			return false, nil, wrap("read stream "+*stream, err)
		}
	}
	if err := br.Close(); err != nil {
		return false, nil, fmt.Errorf("inbox insert %s/%s: %w", ev.Provider, ev.DedupKey, classify(err))
	}
	return tag.RowsAffected() == 1, history, nil
}

// insertInbox is the dedup gate alone (see insertInboxAndRead), for
// deliveries stored before they are applied (Inbox.Hold).
func insertInbox(ctx context.Context, tx pgx.Tx, ev delivery.Event, status string) (bool, error) {
	normalized, err := json.Marshal(encodeNormalized(ev))
	if err != nil {
		return false, fmt.Errorf("encode normalized %s: %w", ev.DedupKey, err)
	}
	var stream *string
	if !ev.Ignored() {
		s := ev.StreamID()
		stream = &s
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO webhook_inbox (provider, dedup_key, event_type, stream_id, payload_hash, raw_body, normalized, status)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (provider, dedup_key) DO NOTHING`,
		ev.Provider, ev.DedupKey, ev.Type, stream, ev.PayloadHash, ev.Raw, normalized, status)
	if err != nil {
		return false, fmt.Errorf("inbox insert %s/%s: %w", ev.Provider, ev.DedupKey, classify(err))
	}
	return tag.RowsAffected() == 1, nil
}

// normalizedEvent is the inbox's copy of a normalized delivery, so a row can
// be re-driven (EventStoreDB sweeper, IPN verifier) without re-parsing.
type normalizedEvent struct {
	Provider   string           `json:"provider"`
	DedupKey   string           `json:"dedup_key"`
	Type       string           `json:"type"`
	PaymentKey string           `json:"payment_key,omitempty"`
	OccurredAt time.Time        `json:"occurred_at"`
	Facts      []normalizedFact `json:"facts"`
}

type normalizedFact struct {
	Kind       string `json:"kind"`
	BusinessID string `json:"business_id,omitempty"`
	Amount     int64  `json:"amount"`
	Fee        int64  `json:"fee,omitempty"`
	Currency   string `json:"currency,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

func encodeNormalized(ev delivery.Event) normalizedEvent {
	n := normalizedEvent{Provider: ev.Provider, DedupKey: ev.DedupKey, Type: ev.Type,
		PaymentKey: ev.PaymentKey, OccurredAt: ev.OccurredAt, Facts: []normalizedFact{}}
	for _, f := range ev.Facts {
		n.Facts = append(n.Facts, normalizedFact{Kind: string(f.Kind), BusinessID: f.BusinessID,
			Amount: f.Amount, Fee: f.Fee, Currency: string(f.Currency), Reason: f.Reason})
	}
	return n
}

// Redrive applies a row that is on record with status from (an IPN that
// PayPal verified, a row an earlier attempt left behind) in one transaction
// with its status change. A row no longer in status from was driven by
// someone else: nothing to do.
func (r *Recorder) Redrive(ctx context.Context, k Key, from string, d ingest.Decider) (ingest.Result, error) {
	var res ingest.Result
	err := inTx(ctx, r.pool, func(tx pgx.Tx) error {
		ev, status, err := loadInbox(ctx, tx, k, true)
		if err != nil {
			return err
		}
		if status != from {
			res = ingest.Result{Outcome: ingest.Duplicate}
			return nil
		}
		if ev.Ignored() {
			_, err := tx.Exec(ctx, `UPDATE webhook_inbox SET status = 'ignored' WHERE provider = $1 AND dedup_key = $2`,
				k.Provider, k.DedupKey)
			res = ingest.Result{Outcome: ingest.Ignored}
			return classify(err)
		}
		res, err = r.apply(ctx, tx, ev, d)
		return err
	})
	if err != nil {
		return ingest.Result{}, err
	}
	return res, nil
}
