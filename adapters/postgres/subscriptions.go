package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/outbox"
)

// Subscriptions is the push subscriptions' storage (migrations/00084):
// the subscriptions with their operators' actions, and the sender's
// leases, queue, per-stream pending state and attempts. Give it the
// read-model pool (NewReadModelPool): it never appends events, so the feed
// horizon need not wait for its transactions.
type Subscriptions struct{ pool *pgxpool.Pool }

var (
	_ outbox.Store       = (*Subscriptions)(nil)
	_ outbox.SenderStore = (*Subscriptions)(nil)
)

// NewSubscriptions returns the store over pool.
func NewSubscriptions(pool *pgxpool.Pool) *Subscriptions { return &Subscriptions{pool: pool} }

func recordAction(ctx context.Context, tx pgx.Tx, id uuid.UUID, a outbox.Action) error {
	details, err := json.Marshal(a.Details)
	if err != nil || a.Details == nil {
		details = []byte("{}")
	}
	_, err = tx.Exec(ctx, `INSERT INTO subscription_actions (subscription_id, action, actor, note, details, at)
		VALUES ($1, $2, $3, $4, $5, $6)`, id, a.Name, a.Actor, a.Note, details, a.At)
	return err
}

// CreateSubscription implements outbox.Store.
func (s *Subscriptions) CreateSubscription(ctx context.Context, r outbox.NewRow, a outbox.Action) error {
	c, p := clampPosition(r.Position)
	return s.tx(ctx, "create subscription", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO subscriptions (id, url, types, providers, description, state, secret,
			commit_pos, prepare_pos, created_by, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, 'active', $6, $7, $8, $9, $10, $10)`,
			r.ID, r.URL, r.Types, r.Providers, r.Description, r.Secret, c, p, r.CreatedBy, r.CreatedAt)
		if err != nil {
			return err
		}
		return recordAction(ctx, tx, r.ID, a)
	})
}

// tx runs fn in a transaction, wrapping its error with op.
func (s *Subscriptions) tx(ctx context.Context, op string, fn func(pgx.Tx) error) error {
	err := inTx(ctx, s.pool, fn)
	if err != nil && !errors.Is(err, outbox.ErrNotFound) {
		return fmt.Errorf("subscriptions: %s: %w", op, markUnavailable(err))
	}
	return err
}

const subscriptionColumns = `s.id, s.url, s.types, s.providers, s.description, s.state, s.commit_pos, s.prepare_pos,
	s.last_error, s.last_error_at, s.disabled_at, s.old_secret_expires_at,
	s.replay_commit, s.replay_prepare, s.replay_until_commit, s.replay_until_prepare, s.replay_from_time,
	s.created_by, s.created_at, s.updated_at,
	(SELECT count(*) FROM subscription_queue q WHERE q.subscription_id = s.id)`

func scanSubscription(row pgx.Row) (outbox.Subscription, error) {
	var sub outbox.Subscription
	var c, p int64
	var lastAt, disabledAt, oldUntil, fromTime *time.Time
	var rc, rp, uc, up *int64
	err := row.Scan(&sub.ID, &sub.URL, &sub.Types, &sub.Providers, &sub.Description, &sub.State, &c, &p,
		&sub.LastError, &lastAt, &disabledAt, &oldUntil, &rc, &rp, &uc, &up, &fromTime,
		&sub.CreatedBy, &sub.CreatedAt, &sub.UpdatedAt, &sub.Pending)
	if errors.Is(err, pgx.ErrNoRows) {
		return sub, outbox.ErrNotFound
	}
	if err != nil {
		return sub, err
	}
	sub.Position = position(c, p)
	sub.LastErrorAt, sub.DisabledAt, sub.OldSecretExpires = deref(lastAt), deref(disabledAt), deref(oldUntil)
	if rc != nil && uc != nil {
		sub.Replay = &outbox.Replay{From: position(*rc, *rp), Until: position(*uc, *up), FromTime: deref(fromTime)}
	}
	return sub, nil
}

func position(c, p int64) eventstore.Position {
	return eventstore.Position{Commit: uint64(c), Prepare: uint64(p)}
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// ListSubscriptions implements outbox.Store.
func (s *Subscriptions) ListSubscriptions(ctx context.Context) ([]outbox.Subscription, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions s ORDER BY s.created_at, s.id`)
	if err != nil {
		return nil, fmt.Errorf("subscriptions: list: %w", markUnavailable(err))
	}
	defer rows.Close()
	out := []outbox.Subscription{}
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			return nil, fmt.Errorf("subscriptions: list: %w", err)
		}
		out = append(out, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("subscriptions: list: %w", markUnavailable(err))
	}
	return out, nil
}

// GetSubscription implements outbox.Store.
func (s *Subscriptions) GetSubscription(ctx context.Context, id uuid.UUID) (outbox.Subscription, error) {
	sub, err := scanSubscription(s.pool.QueryRow(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions s WHERE s.id = $1`, id))
	if err != nil && !errors.Is(err, outbox.ErrNotFound) {
		return sub, fmt.Errorf("subscriptions: get: %w", markUnavailable(err))
	}
	return sub, err
}

// change runs one UPDATE/DELETE of a subscription and records a: a row
// count of 0 is ErrNotFound.
func (s *Subscriptions) change(ctx context.Context, id uuid.UUID, a outbox.Action, sql string, args ...any) error {
	return s.tx(ctx, a.Name, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, sql, append([]any{id}, args...)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return outbox.ErrNotFound
		}
		return recordAction(ctx, tx, id, a)
	})
}

// UpdateSubscription implements outbox.Store.
func (s *Subscriptions) UpdateSubscription(ctx context.Context, id uuid.UUID, p outbox.Patch, a outbox.Action) error {
	return s.change(ctx, id, a, `UPDATE subscriptions SET url = $2, types = $3, providers = $4, description = $5,
		updated_at = $6 WHERE id = $1`, *p.URL, *p.Types, *p.Providers, *p.Description, a.At)
}

// DeleteSubscription implements outbox.Store.
func (s *Subscriptions) DeleteSubscription(ctx context.Context, id uuid.UUID, a outbox.Action) error {
	return s.change(ctx, id, a, `DELETE FROM subscriptions WHERE id = $1`)
}

// EnableSubscription implements outbox.Store.
func (s *Subscriptions) EnableSubscription(ctx context.Context, id uuid.UUID, now time.Time, a outbox.Action) error {
	return s.tx(ctx, "enable", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE subscriptions SET state = 'active', disabled_at = NULL, updated_at = $2
			WHERE id = $1`, id, now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return outbox.ErrNotFound
		}
		if _, err := tx.Exec(ctx, `UPDATE subscription_streams SET attempts = 0, next_attempt_at = $2
			WHERE subscription_id = $1`, id, now); err != nil {
			return err
		}
		return recordAction(ctx, tx, id, a)
	})
}

// RotateSecret implements outbox.Store.
func (s *Subscriptions) RotateSecret(ctx context.Context, id uuid.UUID, sealed []byte, oldExpires time.Time, a outbox.Action) error {
	return s.change(ctx, id, a, `UPDATE subscriptions SET old_secret = secret, old_secret_expires_at = $3,
		secret = $2, updated_at = $4 WHERE id = $1`, sealed, oldExpires, a.At)
}

// StartReplay implements outbox.Store.
func (s *Subscriptions) StartReplay(ctx context.Context, id uuid.UUID, r outbox.Replay, a outbox.Action) error {
	fc, fp := clampPosition(r.From)
	uc, up := clampPosition(r.Until)
	var from *time.Time
	if !r.FromTime.IsZero() {
		from = &r.FromTime
	}
	return s.change(ctx, id, a, `UPDATE subscriptions SET replay_commit = $2, replay_prepare = $3,
		replay_until_commit = $4, replay_until_prepare = $5, replay_from_time = $6, updated_at = $7 WHERE id = $1`,
		fc, fp, uc, up, from, a.At)
}

// ListAttempts implements outbox.Store.
func (s *Subscriptions) ListAttempts(ctx context.Context, id uuid.UUID, f outbox.AttemptFilter) ([]outbox.Attempt, error) {
	where, args := "", []any{id, f.Limit}
	switch f.Status {
	case "":
	case "succeeded":
		where = " AND succeeded"
	case "failed":
		where = " AND NOT succeeded"
	default:
		n, err := strconv.Atoi(f.Status)
		if err != nil {
			return nil, fmt.Errorf("%w: status", outbox.ErrInvalid)
		}
		where, args = " AND status = $3", append(args, n)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, event_id, event_type, attempt, replay, attempted_at, coalesce(status, 0),
		latency_ms, error, succeeded FROM subscription_attempts WHERE subscription_id = $1`+where+`
		ORDER BY id DESC LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("subscriptions: attempts: %w", markUnavailable(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Attempt, error) {
		var a outbox.Attempt
		var ms int64
		err := r.Scan(&a.ID, &a.EventID, &a.EventType, &a.Attempt, &a.Replay, &a.At, &a.Status, &ms, &a.Error, &a.Succeeded)
		a.Latency, a.At = time.Duration(ms)*time.Millisecond, a.At.UTC()
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("subscriptions: attempts: %w", markUnavailable(err))
	}
	if out == nil {
		out = []outbox.Attempt{}
	}
	return out, nil
}
