package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/adapters/outbox"
)

// replayQueueBound: Lease counts a replay lane's queued events up to this;
// the sender queues more of a replay only below it.
const replayQueueBound = 1000

// Lease implements outbox.SenderStore. The lease's clock is the
// database's, common to every instance.
func (s *Subscriptions) Lease(ctx context.Context, owner string, d time.Duration) ([]outbox.Leased, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE subscriptions s SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
		WHERE s.state <> 'disabled' AND (s.lease_owner = $1 OR s.lease_owner IS NULL OR s.lease_until < now())
		RETURNING s.id, s.url, s.types, s.providers, s.state, s.commit_pos, s.prepare_pos, s.secret, s.old_secret,
			s.old_secret_expires_at, s.replay_commit, s.replay_prepare, s.replay_until_commit, s.replay_until_prepare,
			s.replay_from_time,
			(SELECT count(*) FROM (SELECT 1 FROM subscription_queue q WHERE q.subscription_id = s.id AND q.lane = 1
				LIMIT `+fmt.Sprint(replayQueueBound)+`) b)`,
		owner, d.Seconds())
	if err != nil {
		return nil, fmt.Errorf("subscriptions: lease: %w", markUnavailable(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Leased, error) {
		var l outbox.Leased
		var c, p int64
		var oldUntil, fromTime *time.Time
		var rc, rp, uc, up *int64
		err := r.Scan(&l.ID, &l.URL, &l.Filter.Types, &l.Filter.Providers, &l.State, &c, &p, &l.Secret, &l.OldSecret,
			&oldUntil, &rc, &rp, &uc, &up, &fromTime, &l.ReplayPending)
		l.Position, l.OldUntil = position(c, p), deref(oldUntil)
		if rc != nil && uc != nil {
			l.Replay = &outbox.Replay{From: position(*rc, *rp), Until: position(*uc, *up), FromTime: deref(fromTime)}
		}
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("subscriptions: lease: %w", markUnavailable(err))
	}
	return out, nil
}

// Release implements outbox.SenderStore.
func (s *Subscriptions) Release(ctx context.Context, owner string) error {
	_, err := s.pool.Exec(ctx, `UPDATE subscriptions SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1`, owner)
	if err != nil {
		return fmt.Errorf("subscriptions: release: %w", markUnavailable(err))
	}
	return nil
}

// Enqueue implements outbox.SenderStore. The checkpoint moves first: the
// UPDATE locks the subscription's row, so that Record (which locks it too)
// never sees a stream's last event acknowledged while a new one is being
// queued behind it.
func (s *Subscriptions) Enqueue(ctx context.Context, owner string, now time.Time, qs []outbox.Queueing) ([]bool, error) {
	moved := make([]bool, len(qs))
	err := s.tx(ctx, "enqueue", func(tx pgx.Tx) error {
		for i, q := range qs {
			ok, err := moveCheckpoint(ctx, tx, owner, q)
			if err != nil {
				return err
			}
			if moved[i] = ok; !ok {
				continue
			}
			if err := insertQueued(ctx, tx, q, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return make([]bool, len(qs)), err
	}
	return moved, nil
}

func moveCheckpoint(ctx context.Context, tx pgx.Tx, owner string, q outbox.Queueing) (bool, error) {
	fc, fp := clampPosition(q.From)
	tc, tp := clampPosition(q.To)
	sql := `UPDATE subscriptions SET commit_pos = $4, prepare_pos = $5
		WHERE id = $1 AND lease_owner = $6 AND commit_pos = $2 AND prepare_pos = $3`
	if q.Replay {
		sql = `UPDATE subscriptions SET replay_commit = $4, replay_prepare = $5
			WHERE id = $1 AND lease_owner = $6 AND replay_commit = $2 AND replay_prepare = $3`
		if q.Done {
			sql = `UPDATE subscriptions SET replay_commit = NULL, replay_prepare = NULL, replay_until_commit = NULL,
				replay_until_prepare = NULL, replay_from_time = NULL
				WHERE id = $1 AND lease_owner = $6 AND replay_commit = $2 AND replay_prepare = $3 AND $4::bigint >= 0 AND $5::bigint >= 0`
		}
	}
	tag, err := tx.Exec(ctx, sql, q.Sub, fc, fp, tc, tp, owner)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

func insertQueued(ctx context.Context, tx pgx.Tx, q outbox.Queueing, now time.Time) error {
	if len(q.Rows) == 0 {
		return nil
	}
	n := len(q.Rows)
	subs, lanes, keys := make([]uuid.UUID, n), make([]int16, n), make([]string, n)
	ids, types := make([]uuid.UUID, n), make([]string, n)
	commits, prepares, bodies := make([]int64, n), make([]int64, n), make([][]byte, n)
	for i, r := range q.Rows {
		subs[i], lanes[i], keys[i], ids[i], types[i], bodies[i] = q.Sub, int16(r.Lane), r.StreamKey, r.EventID, r.EventType, r.Body
		commits[i], prepares[i] = clampPosition(r.Position)
	}
	// WITH ORDINALITY keeps the rows in the order given, so that seq (and
	// so each stream's order) is feed order.
	_, err := tx.Exec(ctx, `
		WITH ins AS (
			INSERT INTO subscription_queue (subscription_id, lane, stream_key, event_id, event_type, commit_pos, prepare_pos, body)
			SELECT u.sub, u.lane, u.key, u.id, u.typ, u.c, u.p, u.body
			FROM unnest($1::uuid[], $2::smallint[], $3::text[], $4::uuid[], $5::text[], $6::bigint[], $7::bigint[], $8::bytea[])
				WITH ORDINALITY AS u(sub, lane, key, id, typ, c, p, body, ord)
			ORDER BY u.ord
			RETURNING subscription_id, lane, stream_key, seq)
		INSERT INTO subscription_streams (subscription_id, lane, stream_key, head_seq, next_attempt_at)
		SELECT subscription_id, lane, stream_key, min(seq), $9 FROM ins GROUP BY 1, 2, 3
		ON CONFLICT (subscription_id, lane, stream_key) DO NOTHING`,
		subs, lanes, keys, ids, types, commits, prepares, bodies, now)
	return err
}

// Claim implements outbox.SenderStore.
func (s *Subscriptions) Claim(ctx context.Context, sub uuid.UUID, lane int, now, hold time.Time, skip []string, n int) ([]outbox.Delivery, error) {
	if skip == nil {
		skip = []string{}
	}
	rows, err := s.pool.Query(ctx, `
		WITH due AS (
			SELECT stream_key FROM subscription_streams
			WHERE subscription_id = $1 AND lane = $2 AND next_attempt_at <= $3 AND NOT (stream_key = ANY($5))
			ORDER BY next_attempt_at LIMIT $6 FOR UPDATE SKIP LOCKED),
		held AS (
			UPDATE subscription_streams st SET next_attempt_at = $4
			FROM due WHERE st.subscription_id = $1 AND st.lane = $2 AND st.stream_key = due.stream_key
			RETURNING st.stream_key, st.head_seq, st.attempts)
		SELECT held.stream_key, held.head_seq, held.attempts + 1, q.event_id, q.event_type, q.body
		FROM held JOIN subscription_queue q ON q.subscription_id = $1 AND q.seq = held.head_seq`,
		sub, lane, now, hold, skip, n)
	if err != nil {
		return nil, fmt.Errorf("subscriptions: claim: %w", markUnavailable(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Delivery, error) {
		d := outbox.Delivery{Sub: sub, Lane: lane}
		err := r.Scan(&d.StreamKey, &d.Seq, &d.Attempt, &d.EventID, &d.EventType, &d.Body)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("subscriptions: claim: %w", markUnavailable(err))
	}
	return out, nil
}

// Record implements outbox.SenderStore: one transaction, one round trip,
// and a fixed number of statements whatever the batch's size. Every attempt
// goes in with one INSERT over arrays, and every success moves its stream's
// head with one statement; only failures (rare, and each with its own
// schedule and state) take statements of their own. At 1,000 deliveries/s
// per subscription the per-result statements were most of the sender's
// Postgres time, which ingest shares the cores with.
func (s *Subscriptions) Record(ctx context.Context, now time.Time, rs []outbox.Result) error {
	if len(rs) == 0 {
		return nil
	}
	return s.tx(ctx, "record attempts", func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		subs := map[uuid.UUID]bool{}
		for _, r := range rs {
			if !subs[r.Sub] {
				subs[r.Sub] = true
				b.Queue(`SELECT 1 FROM subscriptions WHERE id = $1 FOR NO KEY UPDATE`, r.Sub)
			}
		}
		queueAttempts(b, rs)
		queueSucceeded(b, now, rs)
		for _, r := range rs {
			if !r.Succeeded {
				queueFailure(b, now, r)
			}
		}
		for sub := range subs {
			b.Queue(`UPDATE subscriptions SET state = 'active' WHERE id = $1 AND state = 'failing'
				AND NOT EXISTS (SELECT 1 FROM subscription_streams WHERE subscription_id = $1 AND attempts > 0)`, sub)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// queueAttempts: every result's attempt row, in the batch's order.
func queueAttempts(b *pgx.Batch, rs []outbox.Result) {
	n := len(rs)
	subs, events, types, errs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempts, latencies := make([]int32, n), make([]int64, n)
	statuses := make([]*int32, n)
	replays, oks := make([]bool, n), make([]bool, n)
	ats := make([]time.Time, n)
	for i, r := range rs {
		subs[i], events[i], types[i], errs[i] = r.Sub.String(), r.EventID.String(), r.EventType, r.Error
		attempts[i], latencies[i] = int32(r.Attempt), r.Latency.Milliseconds()
		if r.Status != 0 {
			st := int32(r.Status)
			statuses[i] = &st
		}
		replays[i], oks[i], ats[i] = r.Lane == outbox.LaneReplay, r.Succeeded, r.At
	}
	b.Queue(`INSERT INTO subscription_attempts (subscription_id, event_id, event_type, attempt, replay, attempted_at,
		status, latency_ms, error, succeeded)
		SELECT * FROM unnest($1::text[]::uuid[], $2::text[]::uuid[], $3::text[], $4::int[], $5::bool[], $6::timestamptz[],
			$7::int[], $8::bigint[]::int[], $9::text[], $10::bool[])`,
		subs, events, types, attempts, replays, ats, statuses, latencies, errs, oks)
}

// queueSucceeded: each acknowledged head leaves the queue, and its stream's
// head moves to the stream's next queued event, or the stream's row goes
// when none is queued. One statement: its CTEs share a snapshot, so the
// next head is the least seq above the acknowledged one (a head is its
// stream's least seq) rather than the least left after the delete. The
// subscription's row lock, taken first in Record's transaction and by the
// queueing step, keeps a new event from being queued meanwhile.
func queueSucceeded(b *pgx.Batch, now time.Time, rs []outbox.Result) {
	var subs, keys []string
	var lanes []int16
	var seqs []int64
	for _, r := range rs {
		if r.Succeeded {
			subs, keys = append(subs, r.Sub.String()), append(keys, r.StreamKey)
			lanes, seqs = append(lanes, int16(r.Lane)), append(seqs, r.Seq)
		}
	}
	if len(subs) == 0 {
		return
	}
	b.Queue(`WITH done AS (
			SELECT * FROM unnest($1::text[]::uuid[], $2::smallint[], $3::text[], $4::bigint[]) AS d(sub, lane, stream_key, seq)),
		gone AS (
			DELETE FROM subscription_queue q USING done WHERE q.subscription_id = done.sub AND q.seq = done.seq),
		n AS (
			SELECT done.*, (SELECT min(q.seq) FROM subscription_queue q
				WHERE q.subscription_id = done.sub AND q.lane = done.lane AND q.stream_key = done.stream_key
				AND q.seq > done.seq) AS next
			FROM done),
		moved AS (
			UPDATE subscription_streams st SET head_seq = n.next, attempts = 0, next_attempt_at = $5
			FROM n WHERE st.subscription_id = n.sub AND st.lane = n.lane AND st.stream_key = n.stream_key
				AND st.head_seq = n.seq AND n.next IS NOT NULL)
		DELETE FROM subscription_streams st USING n
		WHERE st.subscription_id = n.sub AND st.lane = n.lane AND st.stream_key = n.stream_key
			AND st.head_seq = n.seq AND n.next IS NULL`,
		subs, lanes, keys, seqs, now)
}

// queueFailure: a failed head stays, due again at its schedule's next
// time, and the subscription shows the error (failing, or disabled when
// the schedule ran out).
func queueFailure(b *pgx.Batch, now time.Time, r outbox.Result) {
	next := r.NextAt
	if r.Disable {
		next = now // due at once when re-enabled
	}
	b.Queue(`UPDATE subscription_streams SET attempts = $5, next_attempt_at = $6
		WHERE subscription_id = $1 AND lane = $2 AND stream_key = $3 AND head_seq = $4`,
		r.Sub, r.Lane, r.StreamKey, r.Seq, r.Attempt, next)
	state := `CASE WHEN state = 'active' THEN 'failing' ELSE state END`
	if r.Disable {
		state = `'disabled'`
	}
	b.Queue(`UPDATE subscriptions SET state = `+state+`, last_error = $2, last_error_at = $3,
		disabled_at = CASE WHEN `+state+` = 'disabled' AND disabled_at IS NULL THEN $3 ELSE disabled_at END
		WHERE id = $1 AND state <> 'disabled'`, r.Sub, r.Error, r.At)
}
