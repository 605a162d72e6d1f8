package readmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/onceledger/onceledger/adapters/console"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// Console is the console's read port over the read-model tables, the inbox
// and (for timelines, by default) the Postgres event store's events table.
type Console struct {
	pool *pgxpool.Pool
	opts ConsoleOptions
}

var _ console.ReadModel = (*Console)(nil)

// StreamReader reads one stream of an event store (any eventstore.Store).
type StreamReader interface {
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
}

// ConsoleOptions choose where the events come from when they do not live in
// this database's events table (EventStoreDB).
type ConsoleOptions struct {
	// Streams reads a payment's stream for its timeline; nil reads the
	// events table.
	Streams StreamReader
	// Lag counts the feed's events after a projection's position (capped
	// reports it stopped counting at a limit); nil counts in the events
	// table, up to lagCap.
	Lag func(ctx context.Context, after eventstore.Position) (n int64, capped bool, err error)
}

// NewConsole returns the console's read port over pool.
func NewConsole(pool *pgxpool.Pool, opts ConsoleOptions) *Console {
	return &Console{pool: pool, opts: opts}
}

// lagCap bounds the default lag count: a far-behind projection must not
// make every overview read the whole feed.
const lagCap = 100_000

// cwrap names the failed read and marks an unreachable or timed-out database
// as eventstore.ErrUnavailable (the console answers 503).
func cwrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if unreachable(err) {
		return fmt.Errorf("readmodel console: %s: %w: %w", op, eventstore.ErrUnavailable, err)
	}
	return fmt.Errorf("readmodel console: %s: %w", op, err)
}

func unreachable(err error) bool {
	if errors.Is(err, eventstore.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgerrcode.IsConnectionException(pgErr.Code) || pgErr.Code == pgerrcode.AdminShutdown ||
			pgErr.Code == pgerrcode.CrashShutdown || pgErr.Code == pgerrcode.CannotConnectNow ||
			pgErr.Code == pgerrcode.QueryCanceled || pgErr.Code == pgerrcode.TooManyConnections
	}
	return false
}

// where builds a WHERE clause of optional conditions with numbered
// arguments, so that each query names only the filters in use and the
// planner sees plain index conditions.
type where struct {
	conds []string
	args  []any
}

// add appends cond, in which each "?" is the next argument.
func (w *where) add(cond string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(w.args)), 1)
	}
	w.conds = append(w.conds, cond)
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// limit appends a LIMIT argument and returns the clause.
func (w *where) limit(n int) string {
	if n <= 0 {
		n = 50
	}
	w.args = append(w.args, n)
	return " LIMIT $" + strconv.Itoa(len(w.args))
}

// ---- overview and charts ----

// Overview reads the overview's figures, its queries side by side.
func (c *Console) Overview(ctx context.Context) (console.Overview, error) {
	var ov console.Overview
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		ov.Balances, err = c.balances(gctx)
		ov.Trial = trialBalance(ov.Balances)
		return err
	})
	g.Go(func() (err error) {
		ov.Projections, err = c.Projections(gctx)
		return err
	})
	g.Go(func() error {
		rows, _ := c.pool.Query(gctx, `
			SELECT provider, status, count(*) FROM webhook_inbox
			GROUP BY provider, status ORDER BY provider COLLATE "C", status COLLATE "C"`)
		var err error
		ov.Inbox, err = pgx.CollectRows(rows, pgx.RowToStructByPos[console.InboxCount])
		return cwrap("inbox counts", err)
	})
	g.Go(func() error {
		rows, _ := c.pool.Query(gctx, `
			SELECT kind, count(*) FROM reconciliation_items WHERE status = 'open'
			GROUP BY kind ORDER BY count(*) DESC, kind COLLATE "C"`)
		var err error
		ov.OpenItems, err = pgx.CollectRows(rows, pgx.RowToStructByPos[console.KindCount])
		return cwrap("open items", err)
	})
	// Settlement imports: none until the settlement work adds its tables.
	return ov, g.Wait()
}

// TrialBalance sums the debit and the credit balances per currency.
func (c *Console) TrialBalance(ctx context.Context) ([]console.TrialBalance, error) {
	bals, err := c.balances(ctx)
	return trialBalance(bals), err
}

func (c *Console) balances(ctx context.Context) ([]console.Balance, error) {
	rows, _ := c.pool.Query(ctx, `
		SELECT account, currency, balance FROM account_balances
		ORDER BY account COLLATE "C", currency COLLATE "C"`)
	bals, err := pgx.CollectRows(rows, pgx.RowToStructByPos[console.Balance])
	return bals, cwrap("balances", err)
}

func trialBalance(bals []console.Balance) []console.TrialBalance {
	trial := map[string]*console.TrialBalance{}
	var currencies []string
	for _, b := range bals {
		t := trial[b.Currency]
		if t == nil {
			t = &console.TrialBalance{Currency: b.Currency}
			trial[b.Currency] = t
			currencies = append(currencies, b.Currency)
		}
		if b.Balance > 0 {
			t.Debits += b.Balance
		} else {
			t.Credits -= b.Balance
		}
	}
	slices.Sort(currencies)
	out := make([]console.TrialBalance, 0, len(currencies))
	for _, cur := range currencies {
		out = append(out, *trial[cur])
	}
	return out
}

// DailyVolume sums captures, refunds (net of reversals) and disputes
// opened per UTC day and currency, from the journal.
func (c *Console) DailyVolume(ctx context.Context, from, to time.Time) ([]console.DayVolume, error) {
	rows, _ := c.pool.Query(ctx, `
		SELECT (occurred_at AT TIME ZONE 'UTC')::date AS day, currency,
			coalesce(sum(-amount) FILTER (WHERE account = 'revenue:sales'), 0)::bigint,
			coalesce(sum(amount) FILTER (WHERE account = 'revenue:refunds'), 0)::bigint,
			coalesce(sum(amount) FILTER (WHERE account LIKE 'receivable:disputes:%'
				AND event_type = 'dispute.opened'), 0)::bigint
		FROM ledger_entries
		WHERE occurred_at >= $1 AND occurred_at < $2
		  AND (account IN ('revenue:sales', 'revenue:refunds') OR account LIKE 'receivable:disputes:%')
		GROUP BY 1, 2 ORDER BY 1, 2`, from, to)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[console.DayVolume])
	return out, cwrap("daily volume", err)
}

// InboxMix counts deliveries per UTC day of first arrival and status.
func (c *Console) InboxMix(ctx context.Context, from, to time.Time) ([]console.DayOutcome, error) {
	rows, _ := c.pool.Query(ctx, `
		SELECT (first_seen_at AT TIME ZONE 'UTC')::date, status, count(*)
		FROM webhook_inbox WHERE first_seen_at >= $1 AND first_seen_at < $2
		GROUP BY 1, 2 ORDER BY 1, 2`, from, to)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[console.DayOutcome])
	return out, cwrap("inbox mix", err)
}

// ---- payments ----

const consolePaymentColumns = `provider, payment_id, stream_id, status, coalesce(currency, ''),
	authorized_amount, captured_amount, fee_amount, refunded_amount, refund_pending_amount,
	dispute_open_amount, dispute_lost_amount, version, updated_at`

func scanConsolePayment(row pgx.CollectableRow) (console.Payment, error) {
	var p console.Payment
	var version int64
	err := row.Scan(&p.Provider, &p.PaymentID, &p.StreamID, &p.Status, &p.Currency, &p.Authorized, &p.Captured,
		&p.Fee, &p.Refunded, &p.RefundPending, &p.DisputeOpen, &p.DisputeLost, &version, &p.UpdatedAt)
	p.Version = uint64(version)
	return p, err
}

// Payments searches payments, most recently active first.
func (c *Console) Payments(ctx context.Context, f console.PaymentFilter) ([]console.Payment, error) {
	var w where
	if f.Provider != "" {
		w.add("provider = ?", f.Provider)
	}
	if f.PaymentID != "" {
		// LIKE with a literal prefix uses the text_pattern_ops index.
		w.add(`payment_id LIKE ? ESCAPE '\'`, consoleLikePrefix(f.PaymentID))
	}
	if f.Status != "" {
		w.add("status = ?", f.Status)
	}
	if f.Currency != "" {
		w.add("currency = ?", f.Currency)
	}
	if !f.From.IsZero() {
		w.add("updated_at >= ?", f.From)
	}
	if !f.To.IsZero() {
		w.add("updated_at < ?", f.To)
	}
	if k := f.After; k != nil {
		w.add("(updated_at, provider, payment_id) < (?, ?, ?)", k.UpdatedAt, k.Provider, k.PaymentID)
	}
	sql := `SELECT ` + consolePaymentColumns + ` FROM payments` + w.sql() +
		` ORDER BY updated_at DESC, provider DESC, payment_id DESC` + w.limit(f.Limit)
	rows, _ := c.pool.Query(ctx, sql, w.args...)
	out, err := pgx.CollectRows(rows, scanConsolePayment)
	return out, cwrap("payments", err)
}

func consoleLikePrefix(prefix string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(prefix) + "%"
}

// Timeline reads a payment, the events of its stream with their postings,
// its deliveries and its reconciliation items.
func (c *Console) Timeline(ctx context.Context, provider, paymentID string) (console.Timeline, bool, error) {
	var t console.Timeline
	rows, _ := c.pool.Query(ctx, `SELECT `+consolePaymentColumns+` FROM payments WHERE provider = $1 AND payment_id = $2`, provider, paymentID)
	ps, err := pgx.CollectRows(rows, scanConsolePayment)
	if err != nil {
		return t, false, cwrap("payment", err)
	}
	stream := "payment-" + provider + "-" + paymentID
	if len(ps) == 1 {
		t.Payment = ps[0]
		stream = t.Payment.StreamID
	} else {
		// Not projected yet (or unknown): the stream decides.
		t.Payment = console.Payment{Provider: provider, PaymentID: paymentID, StreamID: stream, Status: "not projected yet"}
	}
	events, err := c.readStream(ctx, stream)
	if err != nil {
		return t, false, err
	}
	if len(ps) == 0 && len(events) == 0 {
		return t, false, nil
	}
	for _, e := range events {
		t.Facts = append(t.Facts, fact(e))
	}
	if t.Deliveries, err = c.streamDeliveries(ctx, stream); err != nil {
		return t, false, err
	}
	rows, _ = c.pool.Query(ctx, `SELECT `+consoleReconColumns+` FROM reconciliation_items WHERE stream_id = $1
		ORDER BY coalesce(opened_at, '-infinity'::timestamptz), kind, item_key`, stream)
	if t.Items, err = pgx.CollectRows(rows, scanConsoleRecon); err != nil {
		return t, false, cwrap("reconciliation items of "+stream, err)
	}
	for _, it := range t.Items {
		if it.Status == "open" {
			t.Payment.OpenItems++
		} else {
			t.Payment.ReconciledItems++
		}
	}
	return t, true, nil
}

func (c *Console) readStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error) {
	if c.opts.Streams != nil {
		evs, err := c.opts.Streams.ReadStream(ctx, stream)
		return evs, cwrap("stream "+stream, err)
	}
	rows, _ := c.pool.Query(ctx, `
		SELECT event_id, stream_id, version, type, data, metadata, tx_id, global_position, recorded_at
		FROM events WHERE stream_id = $1 ORDER BY version`, stream)
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (eventstore.RecordedEvent, error) {
		var e eventstore.RecordedEvent
		var version, commit, prepare int64
		err := row.Scan(&e.ID, &e.StreamID, &version, &e.Type, &e.Data, &e.Metadata, &commit, &prepare, &e.RecordedAt)
		e.Version, e.Position = uint64(version), eventstore.Position{Commit: uint64(commit), Prepare: uint64(prepare)}
		return e, err
	})
	return evs, cwrap("stream "+stream, err)
}

// fact renders one recorded event for the timeline. Events of types this
// code does not know (recorded by a newer version, or by an action) are
// shown with their type and data, and an "actor" and "note" when their data
// has them.
func fact(e eventstore.RecordedEvent) console.Fact {
	f := console.Fact{Version: e.Version, Type: e.Type, EventID: e.ID.String(), RecordedAt: e.RecordedAt, Data: consoleIndentJSON(e.Data)}
	var extra struct {
		Actor string `json:"actor"`
		Note  string `json:"note"`
	}
	_ = json.Unmarshal(e.Data, &extra)
	f.Actor, f.Note = extra.Actor, extra.Note
	ev, err := payment.Decode(e.Type, e.Data)
	if err != nil {
		f.Summary = e.Type
		return f
	}
	m := ev.Metadata()
	f.OccurredAt, f.DedupKey = m.OccurredAt, m.DedupKey
	f.Summary = summarize(ev)
	for _, p := range payment.Postings(ev) {
		f.Postings = append(f.Postings, console.Posting{Account: p.Account, Currency: string(p.Currency), Amount: p.Amount})
	}
	return f
}

func summarize(ev payment.Event) string {
	amt := func(n int64, c money.Currency) string { return money.FormatMinor(n, c) + " " + string(c) }
	switch e := ev.(type) {
	case payment.Authorized:
		return fmt.Sprintf("Authorization %s of %s", e.AuthorizationID, amt(e.Amount, e.Currency))
	case payment.Captured:
		return fmt.Sprintf("Capture %s of %s, fee %s", e.CaptureID, amt(e.Amount, e.Currency), amt(e.Fee, e.Currency))
	case payment.FeeRecorded:
		return fmt.Sprintf("Fee %s of capture %s recorded", amt(e.Fee, e.Currency), e.CaptureID)
	case payment.Failed:
		return "Payment failed: " + e.Reason
	case payment.Canceled:
		return "Authorization canceled: " + e.Reason
	case payment.RefundPending:
		return fmt.Sprintf("Refund %s of %s before any capture: pending", e.RefundID, amt(e.Amount, e.Currency))
	case payment.RefundPosted:
		return fmt.Sprintf("Refund %s of %s", e.RefundID, amt(e.Amount, e.Currency))
	case payment.RefundReversed:
		return fmt.Sprintf("Refund %s of %s reversed", e.RefundID, amt(e.Amount, e.Currency))
	case payment.DisputeOpened:
		return fmt.Sprintf("Dispute %s opened for %s", e.DisputeID, amt(e.Amount, e.Currency))
	case payment.DisputeWon:
		return fmt.Sprintf("Dispute %s won: %s back", e.DisputeID, amt(e.Amount, e.Currency))
	case payment.DisputeLost:
		return fmt.Sprintf("Dispute %s lost: %s", e.DisputeID, amt(e.Amount, e.Currency))
	case payment.PayoutPaid:
		return fmt.Sprintf("Payout %s of %s", e.PayoutID, amt(e.Amount, e.Currency))
	case payment.Flagged:
		return fmt.Sprintf("Reconciliation item %s (%s) opened: %s", e.Kind, e.Key, e.Details)
	case payment.Cleared:
		return fmt.Sprintf("Reconciliation item %s (%s) resolved: %s", e.Kind, e.Key, e.Details)
	case payment.Resolved:
		return fmt.Sprintf("Reconciliation item %s (%s) resolved by an operator", e.Kind, e.Key)
	case payment.Reopened:
		return fmt.Sprintf("Reconciliation item %s (%s) reopened by an operator", e.Kind, e.Key)
	}
	return ev.Type()
}

func consoleIndentJSON(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// ---- reconciliation ----

const consoleReconColumns = `stream_id, kind, item_key, status, provider, payment_id, details, opened_at, resolved_at,
	coalesce(resolved_by, ''), coalesce(note, '')`

func scanConsoleRecon(row pgx.CollectableRow) (console.ReconItem, error) {
	var it console.ReconItem
	var opened, resolved *time.Time
	var by, note string
	err := row.Scan(&it.Ref.StreamID, &it.Ref.Kind, &it.Ref.Key, &it.Status, &it.Provider, &it.PaymentID, &it.Details, &opened, &resolved,
		&by, &note)
	// An operator's last word on the item, after what the facts said.
	switch {
	case by != "":
		it.Details += fmt.Sprintf(" — resolved by %s: %s", by, note)
	case note != "":
		it.Details += fmt.Sprintf(" — reopened: %s", note)
	}
	if opened != nil {
		it.OpenedAt = *opened
	}
	if resolved != nil {
		it.ResolvedAt = *resolved
	}
	return it, err
}

// consoleOpenedKey is the items' sort key: an unknown opening time sorts first.
const consoleOpenedKey = `coalesce(opened_at, '-infinity'::timestamptz)`

func orNegInfinity(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

// ReconItems lists items, oldest first.
func (c *Console) ReconItems(ctx context.Context, f console.ReconFilter) ([]console.ReconItem, error) {
	var w where
	if f.Status != "" {
		w.add("status = ?", f.Status)
	}
	if f.Kind != "" {
		w.add("kind = ?", f.Kind)
	}
	if f.Provider != "" {
		w.add("provider = ?", f.Provider)
	}
	if !f.OpenedBefore.IsZero() {
		w.add(consoleOpenedKey+" < ?", f.OpenedBefore)
	}
	if k := f.After; k != nil {
		w.add("("+consoleOpenedKey+", stream_id, kind, item_key) > (?, ?, ?, ?)", orNegInfinity(k.OpenedAt), k.StreamID, k.Kind, k.Key)
	}
	sql := `SELECT ` + consoleReconColumns + ` FROM reconciliation_items` + w.sql() +
		` ORDER BY ` + consoleOpenedKey + `, stream_id, kind, item_key` + w.limit(f.Limit)
	rows, _ := c.pool.Query(ctx, sql, w.args...)
	out, err := pgx.CollectRows(rows, scanConsoleRecon)
	return out, cwrap("reconciliation items", err)
}

// ---- inbox ----

const consoleInboxColumns = `provider, dedup_key, event_type, coalesce(stream_id, ''), status, delivery_count,
	conflict_count, attempts, coalesce(last_error, ''), first_seen_at, last_seen_at, applied_at`

func scanInboxInto(row pgx.Row, r *console.InboxRow, extra ...any) error {
	var applied *time.Time
	dest := append([]any{&r.Provider, &r.DedupKey, &r.EventType, &r.StreamID, &r.Status, &r.DeliveryCount,
		&r.ConflictCount, &r.Attempts, &r.LastError, &r.FirstSeenAt, &r.LastSeenAt, &applied}, extra...)
	err := row.Scan(dest...)
	if applied != nil {
		r.AppliedAt = *applied
	}
	return err
}

func consoleInboxWhere(f console.InboxFilter) *where {
	w := &where{}
	if f.Provider != "" {
		w.add("provider = ?", f.Provider)
	}
	if f.Status != "" {
		w.add("status = ?", f.Status)
	}
	if f.Type != "" {
		w.add("event_type = ?", f.Type)
	}
	if !f.From.IsZero() {
		w.add("first_seen_at >= ?", f.From)
	}
	if !f.To.IsZero() {
		w.add("first_seen_at < ?", f.To)
	}
	return w
}

// Inbox lists deliveries, most recent first.
func (c *Console) Inbox(ctx context.Context, f console.InboxFilter) ([]console.InboxRow, error) {
	w := consoleInboxWhere(f)
	if k := f.After; k != nil {
		w.add("(first_seen_at, provider, dedup_key) < (?, ?, ?)", k.FirstSeenAt, k.Provider, k.DedupKey)
	}
	sql := `SELECT ` + consoleInboxColumns + ` FROM webhook_inbox` + w.sql() +
		` ORDER BY first_seen_at DESC, provider DESC, dedup_key DESC` + w.limit(f.Limit)
	rows, _ := c.pool.Query(ctx, sql, w.args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (console.InboxRow, error) {
		var r console.InboxRow
		return r, scanInboxInto(row, &r)
	})
	return out, cwrap("inbox", err)
}

// InboxCounts counts the matching deliveries by status.
func (c *Console) InboxCounts(ctx context.Context, f console.InboxFilter) ([]console.StatusCount, error) {
	w := consoleInboxWhere(f)
	rows, _ := c.pool.Query(ctx, `SELECT status, count(*) FROM webhook_inbox`+w.sql()+
		` GROUP BY status ORDER BY status COLLATE "C"`, w.args...)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[console.StatusCount])
	return out, cwrap("inbox counts", err)
}

// Delivery reads one delivery with its payload and conflicting
// redeliveries.
func (c *Console) Delivery(ctx context.Context, provider, dedupKey string) (console.Delivery, bool, error) {
	var d console.Delivery
	var normalized []byte
	err := scanInboxInto(c.pool.QueryRow(ctx, `SELECT `+consoleInboxColumns+`, payload_hash, raw_body, normalized
		FROM webhook_inbox WHERE provider = $1 AND dedup_key = $2`, provider, dedupKey),
		&d.InboxRow, &d.PayloadHash, &d.Raw, &normalized)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, cwrap("delivery", err)
	}
	if len(d.Raw) == 0 {
		d.Raw = nil // erased: not kept any more
	}
	if normalized != nil {
		d.Normalized = consoleIndentJSON(normalized)
	}
	rows, _ := c.pool.Query(ctx, `SELECT payload_hash, delivery_count, first_seen_at, raw_body
		FROM webhook_conflicts WHERE provider = $1 AND dedup_key = $2 ORDER BY first_seen_at`, provider, dedupKey)
	d.Conflicts, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (console.Conflict, error) {
		var cf console.Conflict
		err := row.Scan(&cf.PayloadHash, &cf.DeliveryCount, &cf.FirstSeenAt, &cf.Raw)
		if len(cf.Raw) == 0 {
			cf.Raw = nil
		}
		return cf, err
	})
	return d, true, cwrap("delivery conflicts", err)
}

func (c *Console) streamDeliveries(ctx context.Context, stream string) ([]console.Delivery, error) {
	rows, _ := c.pool.Query(ctx, `SELECT `+consoleInboxColumns+`, payload_hash, raw_body
		FROM webhook_inbox WHERE stream_id = $1 ORDER BY first_seen_at, provider, dedup_key`, stream)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (console.Delivery, error) {
		var d console.Delivery
		err := scanInboxInto(row, &d.InboxRow, &d.PayloadHash, &d.Raw)
		if len(d.Raw) == 0 {
			d.Raw = nil
		}
		return d, err
	})
	return out, cwrap("deliveries of "+stream, err)
}

// ---- payouts ----

// Payouts lists the payouts webhooks reported (ledger_entries of
// payout.paid on bank:payouts), most recent first. Settlement lines and
// matching come with the settlement work.
func (c *Console) Payouts(ctx context.Context, f console.PayoutFilter) ([]console.Payout, error) {
	var w where
	w.add("account = 'bank:payouts' AND event_type = 'payout.paid'")
	if f.Provider != "" {
		w.add("provider = ?", f.Provider)
	}
	if f.Currency != "" {
		w.add("currency = ?", f.Currency)
	}
	if !f.From.IsZero() {
		w.add("occurred_at >= ?", f.From)
	}
	if !f.To.IsZero() {
		w.add("occurred_at < ?", f.To)
	}
	if k := f.After; k != nil {
		w.add("(occurred_at, stream_id) < (?, ?)", k.At, k.StreamID)
	}
	sql := `SELECT provider, stream_id, amount, currency, occurred_at FROM ledger_entries` + w.sql() +
		` ORDER BY occurred_at DESC, stream_id DESC` + w.limit(f.Limit)
	rows, _ := c.pool.Query(ctx, sql, w.args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (console.Payout, error) {
		var p console.Payout
		err := row.Scan(&p.Provider, &p.StreamID, &p.Amount, &p.Currency, &p.At)
		p.PayoutID = strings.TrimPrefix(p.StreamID, "payout-"+p.Provider+"-")
		p.Status = "paid"
		return p, err
	})
	return out, cwrap("payouts", err)
}

// ---- projections ----

// Projections reports every projection's checkpoint and lag.
func (c *Console) Projections(ctx context.Context) ([]console.Projection, error) {
	type cp struct {
		Name            string
		Commit, Prepare int64
		Status          string
		LastError       string
		UpdatedAt       time.Time
	}
	rows, _ := c.pool.Query(ctx, `
		SELECT name, position_commit, position_prepare, status, coalesce(last_error, ''), updated_at
		FROM projection_checkpoints ORDER BY name COLLATE "C"`)
	cps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[cp])
	if err != nil {
		return nil, cwrap("projections", err)
	}
	out := make([]console.Projection, len(cps))
	for i, p := range cps {
		pos := eventstore.Position{Commit: uint64(p.Commit), Prepare: uint64(p.Prepare)}
		out[i] = console.Projection{Name: p.Name, Position: pos.String(), Status: p.Status, LastError: p.LastError, UpdatedAt: p.UpdatedAt}
		if c.opts.Lag != nil {
			out[i].Lag, out[i].LagCapped, err = c.opts.Lag(ctx, pos)
			if err != nil {
				return nil, cwrap("lag of "+p.Name, err)
			}
			continue
		}
		err = c.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM events
			WHERE (tx_id, global_position) > ($1, $2) AND tx_id < feed_horizon() LIMIT $3) AS e`,
			p.Commit, p.Prepare, lagCap+1).Scan(&out[i].Lag)
		if err != nil {
			return nil, cwrap("lag of "+p.Name, err)
		}
		if out[i].Lag > lagCap {
			out[i].Lag, out[i].LagCapped = lagCap, true
		}
	}
	return out, nil
}
