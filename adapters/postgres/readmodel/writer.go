package readmodel

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// writer is one read-model transaction, on the live tables or on the shadow
// tables of a rebuild.
type writer struct {
	tx         pgx.Tx
	checkpoint string // live batches: the projection whose checkpoint Commit stores
	shadow     bool
	bulk       bool
}

var _ projections.Batch = (*writer)(nil)

// shadowSuffix names a rebuild's copy of a read-model table.
const shadowSuffix = "_shadow"

// table names the live table, or its shadow.
func (w *writer) table(name string) string {
	if w.shadow {
		return quoted(name + shadowSuffix)
	}
	return quoted(name)
}

func (w *writer) Commit(ctx context.Context, to eventstore.Position) error {
	if w.checkpoint != "" {
		c, p, err := position64(to)
		if err != nil {
			return err
		}
		// A committed batch proves the projection is past any earlier
		// poison: the error fields describe the present, not history.
		if _, err := w.tx.Exec(ctx, `
			UPDATE projection_checkpoints
			SET position_commit = $2, position_prepare = $3, updated_at = now(),
			    last_error = NULL, error_position_commit = NULL, error_position_prepare = NULL
			WHERE name = $1`, w.checkpoint, c, p); err != nil {
			return classify(err)
		}
	}
	return classify(w.tx.Commit(ctx))
}

func (w *writer) Rollback(ctx context.Context) error { return w.tx.Rollback(ctx) }

// ledgerEntryColumns in the order of the arrays and COPY rows below.
var ledgerEntryColumns = []string{"event_id", "posting_index", "stream_id", "event_type", "provider", "account",
	"currency", "amount", "occurred_at", "recorded_at", "position_commit", "position_prepare",
	"period", "late_adjustment", "adjusts_period"}

func (w *writer) InsertLedgerEntries(ctx context.Context, entries []projections.LedgerEntry) error {
	if w.bulk {
		return w.copyLedgerEntries(ctx, entries)
	}
	n := len(entries)
	var (
		ids                                = make([]pgtype.UUID, n)
		idx                                = make([]int32, n)
		streams, types, provs, accts, curs = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		amounts, commits, prepares         = make([]int64, n), make([]int64, n), make([]int64, n)
		occurred, recorded                 = make([]time.Time, n), make([]time.Time, n)
		periods                            = make([]string, n)
		late                               = make([]bool, n)
		adjusts                            = make([]*string, n)
	)
	for i, e := range entries {
		c, p, err := position64(e.Position)
		if err != nil {
			return err
		}
		ids[i] = pgtype.UUID{Bytes: e.EventID, Valid: true}
		idx[i] = int32(e.PostingIndex)
		streams[i], types[i], provs[i], accts[i], curs[i] = e.StreamID, e.EventType, e.Provider, e.Account, string(e.Currency)
		amounts[i], commits[i], prepares[i] = e.Amount, c, p
		occurred[i], recorded[i] = e.OccurredAt, e.RecordedAt
		periods[i], late[i], adjusts[i] = e.Period.String(), e.Late, adjustsColumn(e)
	}
	// Only the rows actually inserted reach the balances, so replaying a
	// batch (or an event twice) changes nothing. Sums are per batch: one
	// upsert per account and currency.
	sql := fmt.Sprintf(`
		WITH inserted AS (
			INSERT INTO %[1]s (%[3]s)
			SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[],
				$7::text[], $8::bigint[], $9::timestamptz[], $10::timestamptz[], $11::bigint[], $12::bigint[],
				$13::text[], $14::bool[], $15::text[])
			ON CONFLICT (event_id, posting_index) DO NOTHING
			RETURNING account, currency, amount
		)
		INSERT INTO %[2]s AS b (account, currency, balance, entry_count, updated_at)
		SELECT account, currency, sum(amount)::bigint, count(*), now()
		FROM inserted GROUP BY account, currency
		ON CONFLICT (account, currency) DO UPDATE
		SET balance = b.balance + excluded.balance,
		    entry_count = b.entry_count + excluded.entry_count,
		    updated_at = excluded.updated_at`,
		w.table("ledger_entries"), w.table("account_balances"), joinQuoted("", ledgerEntryColumns))
	return w.execGeneric(ctx, sql, ids, idx, streams, types, provs, accts, curs, amounts, occurred, recorded, commits, prepares,
		periods, late, adjusts)
}

func (w *writer) copyLedgerEntries(ctx context.Context, entries []projections.LedgerEntry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		c, p, err := position64(e.Position)
		if err != nil {
			return err
		}
		rows[i] = []any{pgtype.UUID{Bytes: e.EventID, Valid: true}, int32(e.PostingIndex), e.StreamID, e.EventType,
			e.Provider, e.Account, string(e.Currency), e.Amount, e.OccurredAt, e.RecordedAt, c, p,
			e.Period.String(), e.Late, adjustsColumn(e)}
	}
	_, err := w.tx.CopyFrom(ctx, pgx.Identifier{"ledger_entries" + shadowSuffix}, ledgerEntryColumns, pgx.CopyFromRows(rows))
	return classify(err)
}

// adjustsColumn is adjusts_period: the closed period a late entry adjusts,
// NULL for the others.
func adjustsColumn(e projections.LedgerEntry) *string {
	if !e.Late {
		return nil
	}
	s := e.Adjusts.String()
	return &s
}

const paymentColumns = `provider, payment_id, stream_id, status, currency, authorized_amount, captured_amount,
	fee_amount, refunded_amount, refund_pending_amount, dispute_open_amount, dispute_lost_amount,
	failed, canceled, version, updated_at, failed_amount, sub_merchant`

func (w *writer) Payments(ctx context.Context, streamIDs []string) (map[string]projections.PaymentRow, error) {
	rows, err := w.tx.Query(ctx, `SELECT `+paymentColumns+` FROM `+w.table("payments")+` WHERE stream_id = ANY($1)`, streamIDs)
	if err != nil {
		return nil, classify(err)
	}
	list, err := pgx.CollectRows(rows, scanPayment)
	if err != nil {
		return nil, classify(err)
	}
	out := make(map[string]projections.PaymentRow, len(list))
	for _, p := range list {
		out[p.StreamID] = p
	}
	return out, nil
}

// scanPayment reads one row of paymentColumns: the row the projection
// writes is the row the API reads.
func scanPayment(row pgx.CollectableRow) (views.Payment, error) {
	var p views.Payment
	err := scanPaymentInto(row, &p)
	return p, err
}

// scanPaymentInto reads paymentColumns into p, then the extra columns
// that follow them into extra.
func scanPaymentInto(row pgx.CollectableRow, p *views.Payment, extra ...any) error {
	var currency, subMerchant *string
	var version int64
	sum := &p.Summary
	err := row.Scan(append([]any{&p.Provider, &p.PaymentID, &p.StreamID, &p.Status, &currency, &sum.Authorized, &sum.Captured,
		&sum.Fees, &sum.Refunded, &sum.RefundsPending, &sum.DisputeOpen, &sum.DisputeLost, &sum.Failed, &sum.Canceled,
		&version, &p.UpdatedAt, &sum.FailedAmount, &subMerchant}, extra...)...)
	if currency != nil {
		sum.Currency = money.Currency(*currency)
	}
	if subMerchant != nil {
		sum.SubMerchant = *subMerchant
	}
	p.Version = uint64(version)
	return err
}

func (w *writer) UpsertPayments(ctx context.Context, rows []projections.PaymentRow) error {
	n := len(rows)
	var (
		provs, ids, streams, statuses, curs = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		subs                                = make([]string, n)
		auth, capt, fees, refd, pend        = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		dOpen, dLost, versions              = make([]int64, n), make([]int64, n), make([]int64, n)
		failed, canceled                    = make([]bool, n), make([]bool, n)
		updated                             = make([]time.Time, n)
		failedAmt                           = make([]int64, n)
	)
	for i, r := range rows {
		s := r.Summary
		provs[i], ids[i], streams[i], statuses[i], curs[i] = r.Provider, r.PaymentID, r.StreamID, r.Status, string(s.Currency)
		auth[i], capt[i], fees[i], refd[i], pend[i] = s.Authorized, s.Captured, s.Fees, s.Refunded, s.RefundsPending
		dOpen[i], dLost[i], versions[i] = s.DisputeOpen, s.DisputeLost, int64(r.Version)
		failed[i], canceled[i], updated[i] = s.Failed, s.Canceled, r.UpdatedAt
		failedAmt[i] = s.FailedAmount
		subs[i] = s.SubMerchant
	}
	// The version guard: a row only moves forward in its stream.
	return w.execGeneric(ctx, `
		INSERT INTO `+w.table("payments")+` AS p (`+paymentColumns+`)
		SELECT provider, payment_id, stream_id, status, NULLIF(currency, ''), authorized_amount, captured_amount,
			fee_amount, refunded_amount, refund_pending_amount, dispute_open_amount, dispute_lost_amount,
			failed, canceled, version, updated_at, failed_amount, NULLIF(sub_merchant, '')
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
			$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bool[], $14::bool[],
			$15::bigint[], $16::timestamptz[], $17::bigint[], $18::text[])
			AS r(provider, payment_id, stream_id, status, currency, authorized_amount, captured_amount,
			fee_amount, refunded_amount, refund_pending_amount, dispute_open_amount, dispute_lost_amount,
			failed, canceled, version, updated_at, failed_amount, sub_merchant)
		ON CONFLICT (provider, payment_id) DO UPDATE
		SET stream_id = excluded.stream_id, status = excluded.status, currency = excluded.currency,
		    authorized_amount = excluded.authorized_amount, captured_amount = excluded.captured_amount,
		    fee_amount = excluded.fee_amount, refunded_amount = excluded.refunded_amount,
		    refund_pending_amount = excluded.refund_pending_amount,
		    dispute_open_amount = excluded.dispute_open_amount, dispute_lost_amount = excluded.dispute_lost_amount,
		    failed = excluded.failed, canceled = excluded.canceled, version = excluded.version,
		    updated_at = excluded.updated_at, failed_amount = excluded.failed_amount, sub_merchant = excluded.sub_merchant
		WHERE p.version < excluded.version`,
		provs, ids, streams, statuses, curs, auth, capt, fees, refd, pend, dOpen, dLost, failed, canceled, versions, updated,
		failedAmt, subs)
}

// paymentColumnList is paymentColumns as a list, for COPY.
var paymentColumnList = strings.Split(strings.Join(strings.Fields(paymentColumns), ""), ",")

func (w *writer) CopyPayments(ctx context.Context, rows []projections.PaymentRow) error {
	src := make([][]any, len(rows))
	for i, r := range rows {
		s := r.Summary
		var currency, subMerchant *string
		if s.Currency != "" {
			c := string(s.Currency)
			currency = &c
		}
		if s.SubMerchant != "" {
			subMerchant = &s.SubMerchant
		}
		src[i] = []any{r.Provider, r.PaymentID, r.StreamID, r.Status, currency, s.Authorized, s.Captured,
			s.Fees, s.Refunded, s.RefundsPending, s.DisputeOpen, s.DisputeLost, s.Failed, s.Canceled,
			int64(r.Version), r.UpdatedAt, s.FailedAmount, subMerchant}
	}
	name := "payments"
	if w.shadow {
		name += shadowSuffix
	}
	_, err := w.tx.CopyFrom(ctx, pgx.Identifier{name}, paymentColumnList, pgx.CopyFromRows(src))
	return classify(err)
}

func (w *writer) ApplyReconciliation(ctx context.Context, changes []projections.ReconciliationChange) error {
	t := w.table("reconciliation_items")
	open := `
		INSERT INTO ` + t + ` AS r (stream_id, kind, item_key, status, provider, payment_id, details, opened_at, opened_event_id)
		SELECT x.s, x.k, x.i, 'open', x.p, x.pay, x.d, x.at, x.ev
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::uuid[])
			AS x(s, k, i, p, pay, d, at, ev)
		ON CONFLICT (stream_id, kind, item_key) DO UPDATE
		SET status = 'open', details = excluded.details, opened_at = excluded.opened_at,
		    opened_event_id = excluded.opened_event_id, resolved_at = NULL, resolved_event_id = NULL,
		    resolved_by = NULL, note = NULL`
	// A clearing without a known opening still records the item, resolved:
	// the event happened, and accountants should see it. The facts clearing
	// an item an operator resolved already keep the operator's name.
	resolve := `
		INSERT INTO ` + t + ` AS r (stream_id, kind, item_key, status, provider, payment_id, details, resolved_at, resolved_event_id)
		SELECT x.s, x.k, x.i, 'resolved', x.p, x.pay, x.d, x.at, x.ev
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::uuid[])
			AS x(s, k, i, p, pay, d, at, ev)
		ON CONFLICT (stream_id, kind, item_key) DO UPDATE
		SET status = 'resolved', resolved_at = excluded.resolved_at, resolved_event_id = excluded.resolved_event_id,
		    details = CASE WHEN excluded.details <> '' THEN excluded.details ELSE r.details END,
		    resolved_by = CASE WHEN r.status = 'resolved' THEN r.resolved_by END`
	// An operator's actions: details (what the facts said) stay; the
	// operator and the note are recorded. Reopening keeps the opening time,
	// so the item's age counts from when the facts opened it.
	humanResolve := `
		INSERT INTO ` + t + ` AS r (stream_id, kind, item_key, status, provider, payment_id, resolved_at, resolved_event_id, resolved_by, note)
		SELECT x.s, x.k, x.i, 'resolved', x.p, x.pay, x.at, x.ev, x.actor, x.note
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::uuid[], $8::text[], $9::text[])
			AS x(s, k, i, p, pay, at, ev, actor, note)
		ON CONFLICT (stream_id, kind, item_key) DO UPDATE
		SET status = 'resolved', resolved_at = excluded.resolved_at, resolved_event_id = excluded.resolved_event_id,
		    resolved_by = excluded.resolved_by, note = excluded.note`
	humanReopen := `
		INSERT INTO ` + t + ` AS r (stream_id, kind, item_key, status, provider, payment_id, opened_at, opened_event_id, note)
		SELECT x.s, x.k, x.i, 'open', x.p, x.pay, x.at, x.ev, x.note
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::uuid[], $8::text[])
			AS x(s, k, i, p, pay, at, ev, note)
		ON CONFLICT (stream_id, kind, item_key) DO UPDATE
		SET status = 'open', resolved_at = NULL, resolved_event_id = NULL, resolved_by = NULL, note = excluded.note`
	// One statement per kind of change, not per change (a settlement
	// import opens an item per line: 50,000 statements for 50,000 lines).
	// A statement may touch a row once, so the changes go in runs of
	// distinct items, in order; a later change of an item starts the next
	// run, and sees what the earlier one wrote.
	b := &pgx.Batch{}
	var run [4]reconRun
	seen := make(map[[3]string]bool, len(changes))
	flush := func() {
		for i, sql := range []string{humanReopen, humanResolve, open, resolve} {
			if r := &run[i]; len(r.streams) > 0 {
				b.Queue(sql, r.args(i)...)
				*r = reconRun{}
			}
		}
		clear(seen)
	}
	for _, c := range changes {
		k := [3]string{c.StreamID, c.Kind, c.Key}
		if seen[k] {
			flush()
		}
		seen[k] = true
		switch {
		case c.Actor != "" && c.Open:
			run[0].add(c)
		case c.Actor != "":
			run[1].add(c)
		case c.Open:
			run[2].add(c)
		default:
			run[3].add(c)
		}
	}
	flush()
	if b.Len() == 0 {
		return nil
	}
	return classify(w.tx.SendBatch(ctx, b).Close())
}

// reconRun is the columns of one reconciliation statement's changes.
type reconRun struct {
	streams, kinds, keys, provs, payments, details, actors, notes []string
	ats                                                           []time.Time
	ids                                                           []pgtype.UUID
}

func (r *reconRun) add(c projections.ReconciliationChange) {
	r.streams, r.kinds, r.keys = append(r.streams, c.StreamID), append(r.kinds, c.Kind), append(r.keys, c.Key)
	r.provs, r.payments, r.details = append(r.provs, c.Provider), append(r.payments, c.PaymentID), append(r.details, c.Details)
	r.actors, r.notes = append(r.actors, c.Actor), append(r.notes, c.Note)
	r.ats, r.ids = append(r.ats, c.At), append(r.ids, pgtype.UUID{Bytes: c.EventID, Valid: true})
}

// args are the statement's arguments: i is its kind, in ApplyReconciliation's
// order (human reopen, human resolve, open, resolve).
func (r *reconRun) args(i int) []any {
	switch i {
	case 0:
		return []any{r.streams, r.kinds, r.keys, r.provs, r.payments, r.ats, r.ids, r.notes}
	case 1:
		return []any{r.streams, r.kinds, r.keys, r.provs, r.payments, r.ats, r.ids, r.actors, r.notes}
	default:
		return []any{r.streams, r.kinds, r.keys, r.provs, r.payments, r.details, r.ats, r.ids}
	}
}

func (w *writer) IndexPaymentIDs(ctx context.Context, ids []views.PaymentID) error {
	if len(ids) == 0 {
		return nil
	}
	bids, streams, kinds := make([]string, len(ids)), make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		bids[i], streams[i], kinds[i] = id.BusinessID, id.StreamID, id.Kind
	}
	_, err := w.tx.Exec(ctx, `
		INSERT INTO `+w.table("payment_ids")+` (business_id, stream_id, kind)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
		ON CONFLICT DO NOTHING`, bids, streams, kinds)
	return classify(err)
}
