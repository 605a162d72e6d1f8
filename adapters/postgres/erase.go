package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/ingest"
)

// Eraser removes stored raw bodies (personal data) from webhook_inbox and
// webhook_conflicts: raw_body becomes NULL, raw_erased_at says when; the
// payload hash, the normalized facts and the status stay. Each erasure and
// its audit record (raw_erasures: actor, reason, selection, rows) commit in
// one transaction, so there is never one without the other. The record is
// an audit row, not an event: erasing a body changes no fact of any stream
// (a payment's history must read the same before and after), the inbox is
// in Postgres in both event-store modes while the streams may be in
// EventStoreDB, and an event could not commit atomically with the UPDATE
// there.
type Eraser struct {
	pool *pgxpool.Pool
}

// NewEraser returns the eraser of pool's database.
func NewEraser(pool *pgxpool.Pool) *Eraser { return &Eraser{pool: pool} }

// Erase erases the raw bodies e selects and records the erasure.
func (x *Eraser) Erase(ctx context.Context, e ingest.Erasure) (ingest.Erased, error) {
	if err := e.Validate(); err != nil {
		return ingest.Erased{}, err
	}
	if e.Reason == "" {
		e.Reason = ingest.ErasureRequest
	}
	// The inbox rows selected: one delivery (with its unverified candidates:
	// the same message, kept apart until verified), or a payment's stream.
	where, args := `provider = $1 AND (dedup_key = $2 OR starts_with(dedup_key, $2 || '`+ingest.CandidateMarker+`'))`,
		[]any{e.Provider, e.DedupKey}
	if e.DedupKey == "" {
		where, args = `provider = $1 AND stream_id = $2`, []any{e.Provider, e.Stream()}
	}
	var out ingest.Erased
	err := inTx(ctx, x.pool, func(tx pgx.Tx) error {
		var err error
		if out, err = eraseWhere(ctx, tx, where, args); err != nil {
			return err
		}
		// The conflicts of every selected row, also of rows erased before.
		if out.ConflictRows, err = eraseConflicts(ctx, tx,
			`(provider, dedup_key) IN (SELECT provider, dedup_key FROM webhook_inbox WHERE `+where+`)`, args); err != nil {
			return err
		}
		return recordErasure(ctx, tx, e.Actor, e.Reason, e.Selector(), out)
	})
	return out, err
}

// EraseOlderThan erases the raw bodies of rows first seen longer than age
// ago, in batches of batch rows (one transaction and one audit record
// each), except held candidates still waiting for their postback, which
// need theirs. It returns the total.
func (x *Eraser) EraseOlderThan(ctx context.Context, age time.Duration, batch int) (ingest.Erased, error) {
	var total ingest.Erased
	selector := "first seen before now - " + age.String()
	for {
		var n ingest.Erased
		err := inTx(ctx, x.pool, func(tx pgx.Tx) error {
			var err error
			n, err = eraseWhere(ctx, tx, `(provider, dedup_key) IN (
				SELECT provider, dedup_key FROM webhook_inbox
				WHERE raw_body IS NOT NULL AND first_seen_at < now() - $1::interval AND status <> '`+ingest.StatusUnverified+`'
				ORDER BY first_seen_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, []any{age.String(), batch})
			if err != nil || n.InboxRows == 0 {
				return err
			}
			return recordErasure(ctx, tx, ingest.ErasureRetention, ingest.ErasureRetention, selector, n)
		})
		if err != nil {
			return total, err
		}
		total.InboxRows += n.InboxRows
		if n.InboxRows < batch {
			break
		}
	}
	// Conflicting payloads by their own age (a conflict arrives after its
	// row, so it is due later).
	err := inTx(ctx, x.pool, func(tx pgx.Tx) error {
		c, err := eraseConflicts(ctx, tx, `first_seen_at < now() - $1::interval`, []any{age.String()})
		if err != nil || c == 0 {
			return err
		}
		total.ConflictRows = c
		return recordErasure(ctx, tx, ingest.ErasureRetention, ingest.ErasureRetention, selector+" (conflicting payloads)",
			ingest.Erased{ConflictRows: c})
	})
	return total, err
}

// eraseWhere erases the raw bodies of the inbox rows matching where and
// returns how many.
func eraseWhere(ctx context.Context, tx pgx.Tx, where string, args []any) (ingest.Erased, error) {
	tag, err := tx.Exec(ctx, `
		UPDATE webhook_inbox SET raw_body = NULL, raw_erased_at = now()
		WHERE raw_body IS NOT NULL AND `+where, args...)
	if err != nil {
		return ingest.Erased{}, fmt.Errorf("erase raw bodies: %w", markUnavailable(err))
	}
	return ingest.Erased{InboxRows: int(tag.RowsAffected())}, nil
}

// eraseConflicts erases the conflicting payloads matching where (kept for
// reconciliation, they hold the same personal data) and returns how many.
func eraseConflicts(ctx context.Context, tx pgx.Tx, where string, args []any) (int, error) {
	tag, err := tx.Exec(ctx, `
		UPDATE webhook_conflicts SET raw_body = NULL, raw_erased_at = now()
		WHERE raw_body IS NOT NULL AND `+where, args...)
	if err != nil {
		return 0, fmt.Errorf("erase conflicting payloads: %w", markUnavailable(err))
	}
	return int(tag.RowsAffected()), nil
}

func recordErasure(ctx context.Context, tx pgx.Tx, actor, reason, selector string, n ingest.Erased) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO raw_erasures (actor, reason, selector, inbox_rows, conflict_rows)
		VALUES ($1, $2, $3, $4, $5)`, actor, reason, selector, n.InboxRows, n.ConflictRows); err != nil {
		return fmt.Errorf("record erasure: %w", markUnavailable(err))
	}
	return nil
}
