package migrations_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for goose
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/migrations"
	"github.com/onceledger/onceledger/projections"
)

var t0 = time.Date(2026, 1, 14, 4, 12, 59, 0, time.UTC)

// oldIPN is a delivery as the IPN adapter normalized it before 00010: its own
// provider name and unprefixed keys.
func oldIPN(key, paymentKey, hash string, f delivery.Fact) delivery.Event {
	return delivery.Event{Provider: "paypal-ipn", DedupKey: key, Type: "Completed", PaymentKey: paymentKey,
		OccurredAt: t0, PayloadHash: hash, Raw: []byte("txn_id=" + key), Facts: []delivery.Fact{f}}
}

func rest(key, paymentKey string, f delivery.Fact) delivery.Event {
	return delivery.Event{Provider: "paypal", DedupKey: key, Type: "PAYMENT.CAPTURE.COMPLETED", PaymentKey: paymentKey,
		OccurredAt: t0, PayloadHash: "h-" + key, Raw: []byte(`{"id":"` + key + `"}`), Facts: []delivery.Fact{f}}
}

func captured(id string, amount, fee int64) delivery.Fact {
	return delivery.Fact{Kind: delivery.KindCaptured, BusinessID: id, Amount: amount, Fee: fee, Currency: "USD"}
}

func refunded(id string, amount int64) delivery.Fact {
	return delivery.Fact{Kind: delivery.KindRefunded, BusinessID: id, Amount: amount, Currency: "USD"}
}

// postback stands in for PayPal's IPN postback: it confirms every message
// but forged ones.
type postback struct{}

func (postback) Verify(_ context.Context, raw []byte) (bool, error) {
	return !bytes.Contains(raw, []byte("forged")), nil
}

func balances(ctx context.Context, t *testing.T, pool *pgxpool.Pool) map[string]int64 {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT account, balance FROM account_balances WHERE balance <> 0`)
	require.NoError(t, err)
	out := map[string]int64{}
	type row struct {
		Account string
		Balance int64
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	require.NoError(t, err)
	for _, r := range got {
		out[r.Account] = r.Balance
	}
	return out
}

// historyBalances sums every recorded event's postings per account (non-zero
// balances only), as the ledger projection would.
func historyBalances(ctx context.Context, t *testing.T, store *postgres.EventStore) map[string]int64 {
	t.Helper()
	evs, err := store.ReadAll(ctx, eventstore.Start, 100_000)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, r := range evs {
		e, err := payment.Decode(r.Type, r.Data)
		require.NoError(t, err, r.Type)
		for _, p := range payment.Postings(e) {
			out[p.Account] += p.Amount
		}
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// 00010 moves PayPal IPN data into the provider "paypal": an IPN-only stream
// is renamed in place; a stream that REST webhooks also reported (the double
// booking) is dropped and its inbox rows re-driven through the domain against
// the REST stream. After a rebuild the ledger has one provider balance, each
// capture once, and verify passes.
func TestPayPalIPNMovesIntoPayPal(t *testing.T) {
	m := newIPNMigration(t)
	m.seedVersion9()

	// The ledger as history gave it before 00010, folded from the events
	// themselves: the read models of version 9 are not today's.
	before := historyBalances(m.ctx, t, m.store)
	require.Equal(t, int64(1000-79+100*-1), before["provider:paypal:balance"], "REST's own view of B")
	require.Contains(t, before, "provider:paypal-ipn:balance", "the double booking this migration undoes")

	_, err := m.goose.Up(m.ctx)
	require.NoError(t, err)

	m.sweepCollidingRows()
	m.heldRowsAreCandidates()
	m.verifyHeldRows()

	proj := projections.NewService(m.store, readmodel.New(m.pool), slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = proj.Rebuild(m.ctx, nil, projections.RebuildOptions{})
	require.NoError(t, err)
	violations, err := proj.Verify(m.ctx)
	require.NoError(t, err)
	assert.Empty(t, violations)

	assert.Equal(t, map[string]int64{
		"provider:paypal:balance": (1995 - 88 - 500) + (1000 - 79 - 250 - 100) + 700 + (300 - 10),
		"expenses:fees:paypal":    88 + 79 + 10,
		"revenue:sales":           -(1995 + 1000 + 700 + 300),
		"revenue:refunds":         500 + 250 + 100,
	}, balances(m.ctx, t, m.pool))

	m.noIPNProviderLeft()
	m.inboxRowsMoved()
	m.resendsAddNothing()
}

// ipnMigration is a database at version 9 (before 00010), the event store
// and the ingestion service on it.
type ipnMigration struct {
	t     *testing.T
	ctx   context.Context
	goose *goose.Provider
	pool  *pgxpool.Pool
	store *postgres.EventStore
	svc   *ingest.Service
}

func newIPNMigration(t *testing.T) *ipnMigration {
	ctx := context.Background()
	url := pgtest.NewEmptyDatabase(t)
	db, err := sql.Open("pgx", url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(goose.NopLogger()))
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 9)
	require.NoError(t, err)

	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store := postgres.NewEventStore(pool)
	svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{})
	return &ipnMigration{t: t, ctx: ctx, goose: p, pool: pool, store: store, svc: svc}
}

func (m *ipnMigration) ingestAll(evs ...delivery.Event) {
	m.t.Helper()
	for _, ev := range evs {
		_, err := m.svc.Ingest(m.ctx, ev)
		require.NoError(m.t, err, ev.DedupKey)
	}
}

// seedVersion9 records what version 9 held.
//
// A: IPN only, with a refund and a conflicting redelivery (same key, other
// amount). B: reported on both channels (booked twice before 00010); the
// IPN refund RB1 only by IPN, RB2 only by REST.
//
// Held IPNs as the service stored them before issue 13, under their real
// dedup key: U still waiting for PayPal's postback, with a redelivery of
// other facts kept as its conflict; F a forgery PayPal answered INVALID,
// which owned F's key.
func (m *ipnMigration) seedVersion9() {
	t := m.t
	m.ingestAll(
		oldIPN("A:Completed", "A", "hA", captured("A", 1995, 88)),
		oldIPN("RA:Refunded", "A", "hRA", refunded("RA", 500)),
		// Same key, other facts: a conflicting redelivery, kept for review.
		oldIPN("A:Completed", "A", "hA-other", captured("A", 2000, 88)),
		rest("WH-B", "B", captured("B", 1000, 79)),
		oldIPN("B:Completed", "B", "hB", captured("B", 1000, 79)),
		oldIPN("RB1:Refunded", "B", "hRB1", refunded("RB1", 250)),
		rest("WH-RB2", "B", refunded("RB2", 100)),
	)
	m.legacyHeld(oldIPN("U:Completed", "U", "hU", captured("U", 700, 0)), ingest.StatusUnverified)
	_, err := m.pool.Exec(m.ctx, `INSERT INTO webhook_conflicts (provider, dedup_key, payload_hash, raw_body)
		VALUES ('paypal-ipn', 'U:Completed', 'hU-other', 'txn_id=U:Completed&mc_gross=7.50')`)
	require.NoError(t, err)
	forgedF := oldIPN("F:Completed", "F", "hF-forged", captured("F", 100, 0))
	forgedF.Raw = []byte("txn_id=F:Completed&forged")
	m.legacyHeld(forgedF, ingest.StatusInvalid)
}

// legacyHeld holds ev as the service did before issue 13: under its real
// dedup key, in status.
func (m *ipnMigration) legacyHeld(ev delivery.Event, status string) {
	t := m.t
	t.Helper()
	res, err := m.svc.Hold(m.ctx, ev)
	require.NoError(t, err)
	require.Equal(t, ingest.Accepted, res.Outcome)
	cand := ingest.CandidateKey(ev.DedupKey, ev.PayloadHash)
	_, err = m.pool.Exec(m.ctx, `UPDATE webhook_inbox SET dedup_key = $3, status = $4,
		normalized = jsonb_set(normalized, '{dedup_key}', to_jsonb($3::text))
		WHERE provider = $1 AND dedup_key = $2`, ev.Provider, cand, ev.DedupKey, status)
	require.NoError(t, err)
}

// worker is the service's worker of rows in status.
func (m *ipnMigration) worker(status string, opts ingest.WorkerOptions) *ingest.Worker {
	opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	var w *ingest.Worker
	for _, worker := range m.svc.Workers(postgres.NewInbox(m.pool), opts) {
		if worker.Status == status {
			w = worker
		}
	}
	return w
}

// sweepCollidingRows: the colliding rows wait for the sweeper, which is
// among the service's workers on the Postgres event store too; drive them
// as it does.
func (m *ipnMigration) sweepCollidingRows() {
	t := m.t
	w := m.worker(ingest.StatusReceived, ingest.WorkerOptions{})
	require.NotNil(t, w, "the service runs no sweeper of received rows")
	n, err := w.Once(m.ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "B's two IPN rows")
}

// heldRowsAreCandidates: 00060 turned the legacy held rows into the
// candidates they would be today: none owns its real key any more; U is
// still to be verified, the forged F stays kept and marked.
func (m *ipnMigration) heldRowsAreCandidates() {
	t := m.t
	var realKeys int
	require.NoError(t, m.pool.QueryRow(m.ctx, `SELECT count(*) FROM webhook_inbox WHERE dedup_key IN ('ipn:U:Completed', 'ipn:F:Completed')`).Scan(&realKeys))
	assert.Zero(t, realKeys, "a held row does not own its real key")
	var uConflicts int
	require.NoError(t, m.pool.QueryRow(m.ctx, `SELECT count(*) FROM webhook_conflicts WHERE provider = 'paypal' AND dedup_key = $1`,
		ingest.CandidateKey("ipn:U:Completed", "hU")).Scan(&uConflicts))
	assert.Equal(t, 1, uConflicts, "the conflict row follows its held row")
}

// verifyHeldRows: PayPal's genuine IPN for F arrives after the migration;
// the verifier confirms U and the genuine F, promotes them to their real
// keys (the forgery no longer pre-empts F), and leaves the forgery alone.
func (m *ipnMigration) verifyHeldRows() {
	t := m.t
	genuineF := oldIPN("ipn:F:Completed", "F", "hF", captured("F", 300, 10))
	genuineF.Provider = "paypal"
	res, err := m.svc.Hold(m.ctx, genuineF)
	require.NoError(t, err)
	require.Equal(t, ingest.Accepted, res.Outcome)
	verifier := m.worker(ingest.StatusUnverified, ingest.WorkerOptions{Postback: postback{}})
	require.NotNil(t, verifier, "the service runs no verifier of held rows")
	n, err := verifier.Once(m.ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "U and the genuine F; not the forgery")
	n, err = verifier.Once(m.ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// noIPNProviderLeft: no stream, event or inbox row names paypal-ipn any
// more, and B is captured once.
func (m *ipnMigration) noIPNProviderLeft() {
	t, ctx, pool := m.t, m.ctx, m.pool
	var ipnStreams, ipnRows, captures int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE stream_id LIKE 'payment-paypal-ipn-%' OR data->>'provider' = 'paypal-ipn'`).Scan(&ipnStreams))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox WHERE provider = 'paypal-ipn'`).Scan(&ipnRows))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE stream_id = 'payment-paypal-B' AND type = $1`, payment.TypeCaptured).Scan(&captures))
	assert.Zero(t, ipnStreams)
	assert.Zero(t, ipnRows)
	assert.Equal(t, 1, captures, "B captured once")
}

// inboxRowsMoved: the moved inbox rows are applied under provider paypal
// and ipn: keys, the held ones verified (the forgery kept invalid), each
// capture once, their conflicts and review items moved with them.
func (m *ipnMigration) inboxRowsMoved() {
	t, ctx, pool := m.t, m.ctx, m.pool
	type inboxRow struct {
		Status   string
		StreamID *string
		Provider *string
	}
	row := func(key string) inboxRow {
		var r inboxRow
		require.NoError(t, pool.QueryRow(ctx, `SELECT status, stream_id, normalized->>'provider' FROM webhook_inbox WHERE provider = 'paypal' AND dedup_key = $1`, key).
			Scan(&r.Status, &r.StreamID, &r.Provider))
		return r
	}
	for _, k := range []string{"ipn:A:Completed", "ipn:RA:Refunded", "ipn:B:Completed", "ipn:RB1:Refunded"} {
		r := row(k)
		assert.Equal(t, "applied", r.Status, k)
		require.NotNil(t, r.StreamID, k)
		assert.NotContains(t, *r.StreamID, "paypal-ipn", k)
		assert.Equal(t, "paypal", *r.Provider, k)
	}
	held := ingest.CandidateKey
	assert.Equal(t, ingest.StatusApplied, row("ipn:U:Completed").Status)
	assert.Equal(t, ingest.StatusVerified, row(held("ipn:U:Completed", "hU")).Status)
	assert.Equal(t, ingest.StatusApplied, row("ipn:F:Completed").Status)
	assert.Equal(t, ingest.StatusVerified, row(held("ipn:F:Completed", "hF")).Status)
	assert.Equal(t, ingest.StatusInvalid, row(held("ipn:F:Completed", "hF-forged")).Status)
	for _, txn := range []string{"U", "F"} {
		var c int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE stream_id = $1 AND type = $2`,
			"payment-paypal-"+txn, payment.TypeCaptured).Scan(&c))
		assert.Equal(t, 1, c, txn+" captured once")
	}
	var conflicts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_conflicts WHERE provider = 'paypal' AND dedup_key = 'ipn:A:Completed'`).Scan(&conflicts))
	assert.Equal(t, 1, conflicts, "the conflict row follows its inbox row")
	var items int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM reconciliation_items WHERE stream_id = 'payment-paypal-A' AND kind = 'conflicting_redelivery' AND item_key LIKE 'ipn:A:Completed@%'`).Scan(&items))
	assert.Equal(t, 1, items)
}

// resendsAddNothing: the IPN adapter's deliveries now carry provider
// paypal and ipn: keys: a resend of a moved message is a duplicate, adds
// nothing; and a REST report of A, arriving only now, adds nothing either.
func (m *ipnMigration) resendsAddNothing() {
	t, ctx := m.t, m.ctx
	moved := oldIPN("ipn:A:Completed", "A", "hA", captured("A", 1995, 88))
	moved.Provider = "paypal"
	res, err := m.svc.Ingest(ctx, moved)
	require.NoError(t, err)
	assert.Equal(t, ingest.Duplicate, res.Outcome)
	res, err = m.svc.Ingest(ctx, rest("WH-A", "A", captured("A", 1995, 88)))
	require.NoError(t, err)
	var aCaptures int
	require.NoError(t, m.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE stream_id = 'payment-paypal-A' AND type = $1`, payment.TypeCaptured).Scan(&aCaptures))
	assert.Equal(t, 1, aCaptures)
	assert.Equal(t, ingest.Accepted, res.Outcome)
}
