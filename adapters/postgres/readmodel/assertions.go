package readmodel

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// The provider balances' SQL (projections/assertions.go says why it is
// shaped so): balance_movements and balance_assertions, written by the
// reconciliation projection, and GET /v1/balance-assertions.

var _ projections.AssertionWriter = (*writer)(nil)

func (w *writer) InsertMovements(ctx context.Context, ms []projections.Movement) error {
	if len(ms) == 0 {
		return nil
	}
	n := len(ms)
	ids, idx := make([]pgtype.UUID, n), make([]int32, n)
	accts, curs := make([]string, n), make([]string, n)
	ats, amounts := make([]time.Time, n), make([]int64, n)
	for i, m := range ms {
		ids[i], idx[i] = pgtype.UUID{Bytes: m.EventID, Valid: true}, int32(m.PostingIndex)
		accts[i], curs[i], ats[i], amounts[i] = m.Account, string(m.Currency), m.EffectiveAt, m.Amount
	}
	if w.bulk {
		return w.copyMovements(ctx, ms, ids, idx, accts, curs, ats, amounts)
	}
	// Only the rows inserted move the assertions, so a replayed batch
	// changes nothing; each assertion as of a movement's moment or later
	// gains it, found by balance_assertions_account_idx.
	_, err := w.tx.Exec(ctx, `
		WITH inserted AS (
			INSERT INTO `+w.table("balance_movements")+` (event_id, posting_index, account, currency, effective_at, amount)
			SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::timestamptz[], $6::bigint[])
			ON CONFLICT (event_id, posting_index) DO NOTHING
			RETURNING account, currency, effective_at, amount
		), moved AS (
			SELECT a.stream_id, a.point_key, sum(i.amount)::bigint AS amount
			FROM inserted i JOIN `+w.table("balance_assertions")+` a
			  ON a.account = i.account AND a.currency = i.currency AND a.as_of >= i.effective_at
			GROUP BY a.stream_id, a.point_key
		)
		UPDATE `+w.table("balance_assertions")+` AS a SET ledger = a.ledger + moved.amount
		FROM moved WHERE a.stream_id = moved.stream_id AND a.point_key = moved.point_key`,
		ids, idx, accts, curs, ats, amounts)
	return classify(err)
}

// copyMovements is InsertMovements on a rebuild's shadow (bulk): a
// rebuild applies each event once, so every movement is new and none is
// skipped; the rows are COPYed into a shadow without its key (built after
// the load, IndexShadow: an ON CONFLICT insert maintained it row by row
// and made the reconciliation lane the slowest of a rebuild into empty
// tables), and the assertions gain them all, when the shadow has any.
func (w *writer) copyMovements(ctx context.Context, ms []projections.Movement, ids []pgtype.UUID, idx []int32,
	accts, curs []string, ats []time.Time, amounts []int64) error {
	rows := make([][]any, len(ms))
	for i := range ms {
		rows[i] = []any{ids[i], idx[i], accts[i], curs[i], ats[i], amounts[i]}
	}
	if _, err := w.tx.CopyFrom(ctx, pgx.Identifier{"balance_movements" + shadowSuffix},
		[]string{"event_id", "posting_index", "account", "currency", "effective_at", "amount"}, pgx.CopyFromRows(rows)); err != nil {
		return classify(err)
	}
	var held bool
	if err := w.tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+w.table("balance_assertions")+`)`).Scan(&held); err != nil || !held {
		return classify(err)
	}
	_, err := w.tx.Exec(ctx, `
		WITH moved AS (
			SELECT a.stream_id, a.point_key, sum(i.amount)::bigint AS amount
			FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::bigint[]) AS i(account, currency, effective_at, amount)
			JOIN `+w.table("balance_assertions")+` a
			  ON a.account = i.account AND a.currency = i.currency AND a.as_of >= i.effective_at
			GROUP BY a.stream_id, a.point_key
		)
		UPDATE `+w.table("balance_assertions")+` AS a SET ledger = a.ledger + moved.amount
		FROM moved WHERE a.stream_id = moved.stream_id AND a.point_key = moved.point_key`,
		accts, curs, ats, amounts)
	return classify(err)
}

func (w *writer) LatestAssertions(ctx context.Context, keys []projections.AccountKey) (map[projections.AccountKey]time.Time, error) {
	accts, curs := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		accts[i], curs[i] = k.Account, string(k.Currency)
	}
	rows, err := w.tx.Query(ctx, `
		SELECT k.account, k.currency, l.as_of
		FROM unnest($1::text[], $2::text[]) AS k(account, currency)
		CROSS JOIN LATERAL (SELECT as_of FROM `+w.table("balance_assertions")+` a
			WHERE a.account = k.account AND a.currency = k.currency ORDER BY as_of DESC LIMIT 1) l`, accts, curs)
	if err != nil {
		return nil, classify(err)
	}
	out := map[projections.AccountKey]time.Time{}
	var acct, cur string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&acct, &cur, &at}, func() error {
		out[projections.AccountKey{Account: acct, Currency: money.Currency(cur)}] = at
		return nil
	})
	return out, classify(err)
}

func (w *writer) LedgerAsOf(ctx context.Context, k projections.AccountKey, at time.Time) (int64, error) {
	// From the nearest assertion at or before at (its ledger figure is
	// current), plus the movements after it: one indexed read and a short
	// indexed range, not the account's whole history.
	var sum int64
	err := w.tx.QueryRow(ctx, `
		WITH anchor AS (
			SELECT as_of, ledger FROM `+w.table("balance_assertions")+`
			WHERE account = $1 AND currency = $2 AND as_of <= $3 ORDER BY as_of DESC LIMIT 1
		)
		SELECT coalesce((SELECT ledger FROM anchor), 0) + coalesce((
			SELECT sum(amount) FROM `+w.table("balance_movements")+`
			WHERE account = $1 AND currency = $2 AND effective_at <= $3
			  AND effective_at > coalesce((SELECT as_of FROM anchor), '-infinity')), 0)::bigint`,
		k.Account, string(k.Currency), at).Scan(&sum)
	return sum, classify(err)
}

func (w *writer) MovementSums(ctx context.Context, k projections.AccountKey, after, upTo time.Time) ([]projections.MovementSum, error) {
	if !upTo.After(after) {
		return nil, nil
	}
	rows, err := w.tx.Query(ctx, `
		SELECT effective_at, sum(amount)::bigint FROM `+w.table("balance_movements")+`
		WHERE account = $1 AND currency = $2 AND effective_at > $3 AND effective_at <= $4
		GROUP BY effective_at ORDER BY effective_at`, k.Account, string(k.Currency), after, upTo)
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (projections.MovementSum, error) {
		var m projections.MovementSum
		err := r.Scan(&m.At, &m.Amount)
		return m, err
	})
	return out, classify(err)
}

// assertionColumns in the order of InsertAssertions' arrays and
// scanAssertion's fields.
const assertionColumns = `stream_id, point_key, provider, account, currency, as_of, stated, ledger, source, actor,
	note, recorded_at, event_id`

func (w *writer) InsertAssertions(ctx context.Context, rows []projections.AssertionRow) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	streams, keys, provs, accts, curs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	srcs, actors, notes := make([]string, n), make([]string, n), make([]string, n)
	asOf, recorded := make([]time.Time, n), make([]time.Time, n)
	stated, ledger := make([]int64, n), make([]int64, n)
	ids := make([]pgtype.UUID, n)
	for i, r := range rows {
		streams[i], keys[i], provs[i], accts[i], curs[i] = r.StreamID, r.Key, r.Provider, r.Account, r.Currency
		srcs[i], actors[i], notes[i] = r.Source, r.Actor, r.Note
		asOf[i], recorded[i], stated[i], ledger[i] = r.AsOf, r.RecordedAt, r.Stated, r.Ledger
		ids[i] = pgtype.UUID{Bytes: r.EventID, Valid: true}
	}
	_, err := w.tx.Exec(ctx, `
		INSERT INTO `+w.table("balance_assertions")+` (`+assertionColumns+`)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[],
			$7::bigint[], $8::bigint[], $9::text[], $10::text[], $11::text[], $12::timestamptz[], $13::uuid[])
		ON CONFLICT (stream_id, point_key) DO NOTHING`,
		streams, keys, provs, accts, curs, asOf, stated, ledger, srcs, actors, notes, recorded, ids)
	return classify(err)
}

func (w *writer) Mismatch(ctx context.Context, k projections.AccountKey) (projections.Mismatch, error) {
	var m projections.Mismatch
	one := func(order string) (*views.BalanceAssertion, error) {
		a, err := scanAssertion(w.tx.QueryRow(ctx, `SELECT `+assertionColumns+` FROM `+w.table("balance_assertions")+`
			WHERE account = $1 AND currency = $2 AND ledger <> stated ORDER BY as_of `+order+`, stream_id `+order+`, point_key `+order+` LIMIT 1`,
			k.Account, string(k.Currency)))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		return &a, classify(err)
	}
	var err error
	if m.First, err = one("ASC"); err != nil || m.First == nil {
		if err != nil {
			return m, err
		}
	} else if m.Last, err = one("DESC"); err != nil {
		return m, err
	}
	var it views.ReconciliationItem
	var resolvedBy *string
	err = w.tx.QueryRow(ctx, `SELECT status, details, resolved_by FROM `+w.table("reconciliation_items")+`
		WHERE stream_id = $1 AND kind = $2 AND item_key = $3`,
		assertion.StreamID(k.Account, k.Currency), assertion.ReconBalanceMismatch, assertion.ItemKey(k.Account, k.Currency)).
		Scan(&it.Status, &it.Details, &resolvedBy)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return m, nil
	case err != nil:
		return m, classify(err)
	}
	if resolvedBy != nil {
		it.ResolvedBy = *resolvedBy
	}
	m.Item = &it
	return m, nil
}

func (w *writer) RecordActor(ctx context.Context, a projections.EntryActor) error {
	_, err := w.tx.Exec(ctx, `INSERT INTO `+w.table("ledger_actors")+` (event_id, actor, note, kind) VALUES ($1, $2, $3, $4)
		ON CONFLICT (event_id) DO NOTHING`, pgtype.UUID{Bytes: a.EventID, Valid: true}, a.Actor, a.Note, a.Kind)
	return classify(err)
}

func scanAssertion(row pgx.Row) (views.BalanceAssertion, error) {
	var a views.BalanceAssertion
	var id pgtype.UUID
	err := row.Scan(&a.StreamID, &a.Key, &a.Provider, &a.Account, &a.Currency, &a.AsOf, &a.Stated, &a.Ledger,
		&a.Source, &a.Actor, &a.Note, &a.RecordedAt, &id)
	a.EventID = id.Bytes
	return a, err
}

// BalanceAssertions returns the assertions f selects, by as_of, stream
// and key: GET /v1/balance-assertions and the console's list.
func (s *Store) BalanceAssertions(ctx context.Context, f views.AssertionFilter) ([]views.BalanceAssertion, error) {
	var w where
	w.opt("provider = ?", f.Provider)
	w.opt("account = ?", f.Account)
	w.opt("currency = ?", f.Currency)
	switch f.Status {
	case views.AssertionAgreed:
		w.add("ledger = stated")
	case views.AssertionDiffers:
		w.add("ledger <> stated")
	}
	w.optTime("as_of >= ?", f.From)
	w.optTime("as_of < ?", f.To)
	if k := f.After; k != nil {
		w.add("(as_of, stream_id, point_key) > (?, ?, ?)", k.AsOf, k.StreamID, k.Key)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+assertionColumns+` FROM balance_assertions`+w.sql()+
		` ORDER BY as_of, stream_id, point_key`+w.limit(f.Limit), w.args...)
	if err != nil {
		return nil, qwrap("balance assertions", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (views.BalanceAssertion, error) { return scanAssertion(r) })
	return out, qwrap("balance assertions", err)
}

// ItemAbout finds the item GET /v1/reconciliation lists as itemID, and,
// for a balance_mismatch item, the as_of of its first differing assertion
// (else of its latest assertion): the default effective time of an
// adjustment resolving it (operations.ItemLookup).
func (s *Store) ItemAbout(ctx context.Context, itemID string) (time.Time, bool, error) {
	stream, kind, key, err := views.ParseReconciliationID(itemID)
	if err != nil {
		return time.Time{}, false, nil
	}
	var asOf *time.Time
	err = s.pool.QueryRow(ctx, `
		SELECT CASE WHEN r.kind = $4 THEN coalesce(
			(SELECT as_of FROM balance_assertions a WHERE a.account = split_part(r.item_key, '/', 1)
				AND a.currency = split_part(r.item_key, '/', 2) AND a.ledger <> a.stated ORDER BY as_of LIMIT 1),
			(SELECT max(as_of) FROM balance_assertions a WHERE a.account = split_part(r.item_key, '/', 1)
				AND a.currency = split_part(r.item_key, '/', 2))) END
		FROM reconciliation_items r WHERE r.stream_id = $1 AND r.kind = $2 AND r.item_key = $3`,
		stream, kind, key, assertion.ReconBalanceMismatch).Scan(&asOf)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, qwrap("reconciliation item", err)
	}
	return derefTime(asOf), true, nil
}
