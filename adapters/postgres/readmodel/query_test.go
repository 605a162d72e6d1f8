package readmodel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// qEntry inserts one ledger entry and keeps account_balances in step, as the
// ledger projector does.
func qEntry(t *testing.T, pool *pgxpool.Pool, account, currency string, amount int64, occurred time.Time) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	err := pool.QueryRow(ctx, `
		INSERT INTO ledger_entries (event_id, posting_index, stream_id, event_type, provider, account,
			currency, amount, occurred_at, recorded_at, position_commit, position_prepare, period)
		VALUES ($1, 0, 'payment-test-p1', 'payment.captured', 'test', $2, $3, $4, $5, $5, 1,
			(SELECT coalesce(max(position_prepare), 0) + 1 FROM ledger_entries), to_char($5::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM'))
		RETURNING id`, uuid.New(), account, currency, amount, occurred).Scan(&id)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
		INSERT INTO account_balances (account, currency, balance, entry_count, updated_at)
		VALUES ($1, $2, $3, 1, now())
		ON CONFLICT (account, currency) DO UPDATE
		SET balance = account_balances.balance + excluded.balance, entry_count = account_balances.entry_count + 1`,
		account, currency, amount)
	require.NoError(t, err)
	return id
}

func collectBalances(t *testing.T, q *readmodel.Store, f views.BalanceFilter) []views.Balance {
	t.Helper()
	var out []views.Balance
	require.NoError(t, q.Balances(context.Background(), f, func(b views.Balance) error {
		out = append(out, b)
		return nil
	}))
	return out
}

func TestQueryBalancesFiltersAndOrder(t *testing.T) {
	pool := pgtest.NewPool(t)
	q := readmodel.New(pool)
	qEntry(t, pool, "revenue:sales", "USD", -1000, t0)
	qEntry(t, pool, "revenue:sales", "USD", -500, t0.Add(2*time.Hour))
	qEntry(t, pool, "revenue:sales", "EUR", -70, t0)
	qEntry(t, pool, "a_b", "USD", 1, t0)
	qEntry(t, pool, "axb", "USD", 2, t0)
	qEntry(t, pool, "a%c", "USD", 3, t0)
	qEntry(t, pool, "Zeta", "USD", 4, t0) // byte order: upper case sorts first

	all := collectBalances(t, q, views.BalanceFilter{})
	assert.Equal(t, []views.Balance{
		{Account: "Zeta", Currency: "USD", Balance: 4}, {Account: "a%c", Currency: "USD", Balance: 3}, {Account: "a_b", Currency: "USD", Balance: 1}, {Account: "axb", Currency: "USD", Balance: 2},
		{Account: "revenue:sales", Currency: "EUR", Balance: -70}, {Account: "revenue:sales", Currency: "USD", Balance: -1500},
	}, all)

	// LIKE wildcards in the prefix are literal.
	assert.Equal(t, []views.Balance{{Account: "a_b", Currency: "USD", Balance: 1}}, collectBalances(t, q, views.BalanceFilter{AccountPrefix: "a_"}))
	assert.Equal(t, []views.Balance{{Account: "a%c", Currency: "USD", Balance: 3}}, collectBalances(t, q, views.BalanceFilter{AccountPrefix: "a%"}))
	assert.Equal(t, []views.Balance{{Account: "revenue:sales", Currency: "EUR", Balance: -70}},
		collectBalances(t, q, views.BalanceFilter{AccountPrefix: "rev", Currency: "EUR"}))

	// as_of sums the entries that occurred up to then, inclusive.
	assert.Equal(t, []views.Balance{{Account: "revenue:sales", Currency: "USD", Balance: -1000}},
		collectBalances(t, q, views.BalanceFilter{AccountPrefix: "revenue:", Currency: "USD", AsOf: t0.Add(time.Hour)}))
	assert.Equal(t, []views.Balance{{Account: "revenue:sales", Currency: "USD", Balance: -1500}},
		collectBalances(t, q, views.BalanceFilter{AccountPrefix: "revenue:", Currency: "USD", AsOf: t0.Add(2 * time.Hour)}))
	assert.Empty(t, collectBalances(t, q, views.BalanceFilter{AsOf: t0.Add(-time.Second)}))

	// The callback's error stops the stream and comes back unchanged.
	stop := errors.New("stop")
	n := 0
	err := q.Balances(context.Background(), views.BalanceFilter{}, func(views.Balance) error { n++; return stop })
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, n)
}

func TestQueryEntriesWindowAndKeyset(t *testing.T) {
	pool := pgtest.NewPool(t)
	q := readmodel.New(pool)
	var ids []int64
	for i := 0; i < 6; i++ {
		ids = append(ids, qEntry(t, pool, "provider:test:balance", "USD", int64(i+1), t0.Add(time.Duration(i)*time.Hour)))
	}
	qEntry(t, pool, "revenue:sales", "USD", -1, t0)
	keys := map[int64]views.EntryKey{}
	entries := func(f views.EntryFilter) []int64 {
		var out []int64
		require.NoError(t, q.Entries(context.Background(), f, func(e views.Entry) error {
			out = append(out, e.ID)
			keys[e.ID] = e.Key()
			return nil
		}))
		return out
	}
	assert.Equal(t, ids, entries(views.EntryFilter{AccountPrefix: "provider:"}))
	// from inclusive, to exclusive.
	assert.Equal(t, ids[1:3], entries(views.EntryFilter{AccountPrefix: "provider:", From: t0.Add(time.Hour), To: t0.Add(3 * time.Hour)}))
	k1 := keys[ids[1]]
	assert.Equal(t, ids[2:4], entries(views.EntryFilter{AccountPrefix: "provider:", After: &k1, Limit: 2}))
	assert.Empty(t, entries(views.EntryFilter{Currency: "EUR"}))

	var got views.Entry
	k0 := keys[ids[0]]
	require.NoError(t, q.Entries(context.Background(), views.EntryFilter{After: &k0, Limit: 1}, func(e views.Entry) error {
		got = e
		return nil
	}))
	assert.Equal(t, ids[1], got.ID)
	assert.Equal(t, int64(2), got.Amount)
	assert.Equal(t, "USD", got.Currency)
	assert.True(t, got.OccurredAt.Equal(t0.Add(time.Hour)))
	assert.Equal(t, eventstore.Position{Commit: 1, Prepare: 2}, got.Position)
}

func TestQueryPaymentAndReconciliation(t *testing.T) {
	pool := pgtest.NewPool(t)
	q := readmodel.New(pool)
	ctx := context.Background()

	_, found, err := q.Payment(ctx, "stripe", "pi_missing")
	require.NoError(t, err)
	assert.False(t, found)

	_, err = pool.Exec(ctx, `
		INSERT INTO payments (provider, payment_id, stream_id, status, currency, authorized_amount,
			captured_amount, fee_amount, refunded_amount, version, updated_at)
		VALUES ('stripe', 'pi_1', 'payment-stripe-pi_1', 'partially_refunded', 'USD', 1000, 1000, 30, 200, 3, $1),
			('stripe', 'pi_2', 'payment-stripe-pi_2', 'pending', NULL, 0, 0, 0, 0, 0, $1)`, t0)
	require.NoError(t, err)
	p, found, err := q.Payment(ctx, "stripe", "pi_1")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, views.Payment{
		Provider: "stripe", PaymentID: "pi_1", StreamID: "payment-stripe-pi_1", Status: "partially_refunded",
		Summary: payment.Summary{Currency: "USD", Authorized: 1000, Captured: 1000, Fees: 30, Refunded: 200},
		Version: 3, UpdatedAt: p.UpdatedAt,
	}, p)
	assert.True(t, p.UpdatedAt.Equal(t0))
	p, found, err = q.Payment(ctx, "stripe", "pi_2")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Empty(t, p.Summary.Currency)

	_, err = pool.Exec(ctx, `
		INSERT INTO reconciliation_items (stream_id, kind, item_key, status, provider, payment_id, details, opened_at, resolved_at)
		VALUES ('payment-stripe-pi_1', 'over_refund', 'r1', 'open', 'stripe', 'pi_1', 'refunds exceed captures', $1, NULL),
			('payment-stripe-pi_3', 'refund_before_payment', 're_9', 'resolved', 'stripe', 'pi_3', '', $2, $3)`,
		t0.Add(time.Hour), t0, t0.Add(2*time.Hour))
	require.NoError(t, err)
	items := func(f views.ReconciliationFilter) []views.ReconciliationItem {
		var out []views.ReconciliationItem
		require.NoError(t, q.Reconciliation(ctx, f, func(it views.ReconciliationItem) error {
			out = append(out, it)
			return nil
		}))
		return out
	}
	all := items(views.ReconciliationFilter{})
	require.Len(t, all, 2)
	assert.Equal(t, "re_9", all[0].Key, "oldest first")
	assert.True(t, all[0].ResolvedAt.Equal(t0.Add(2*time.Hour)))
	assert.True(t, all[1].ResolvedAt.IsZero())
	open := items(views.ReconciliationFilter{Status: "open"})
	require.Len(t, open, 1)
	assert.Equal(t, "over_refund", open[0].Kind)
	assert.Equal(t, "refunds exceed captures", open[0].Details)
	require.Len(t, items(views.ReconciliationFilter{Kind: "refund_before_payment"}), 1)
	assert.Empty(t, items(views.ReconciliationFilter{Status: "open", Kind: "refund_before_payment"}))
}

// projections.Status over the Postgres event store and this read model:
// the lag counts the feed's events after each checkpoint.
func TestStatusOverPostgres(t *testing.T) {
	pool := pgtest.NewPool(t)
	db := readmodel.New(pool)
	store := postgres.NewEventStore(pool)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		_, err := store.Append(ctx, "payment-test-lag", eventstore.Any, []eventstore.EventData{
			{ID: uuid.New(), Type: "test.event", Data: []byte(`{}`)},
		})
		require.NoError(t, err)
	}
	// Events become visible to feed readers once no older transaction of
	// the server is running (other tests share the server): wait for that.
	var all []eventstore.RecordedEvent
	require.Eventually(t, func() bool {
		var err error
		all, err = store.ReadAll(ctx, eventstore.Start, 100)
		require.NoError(t, err)
		return len(all) == 5
	}, 30*time.Second, 20*time.Millisecond)
	// The ledger projection has applied the first two events.
	at := all[1].Position
	_, err := pool.Exec(ctx, `
		UPDATE projection_checkpoints SET position_commit = $1, position_prepare = $2, status = 'live'
		WHERE name = 'ledger'`, int64(at.Commit), int64(at.Prepare))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
		UPDATE projection_checkpoints SET last_error = 'cannot apply', error_position_commit = $1,
			error_position_prepare = $2, status = 'stopped'
		WHERE name = 'payments'`, int64(all[0].Position.Commit), int64(all[0].Position.Prepare))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
		INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status)
		VALUES ('test', 'a', 'h', '\x7b7d', 'applied'), ('test', 'b', 'h', '\x7b7d', 'applied'),
			('test', 'c', 'h', '\x7b7d', 'received')`)
	require.NoError(t, err)

	st, err := projections.Status(ctx, store, db, projections.StatusOptions{Inbox: true, LagCap: 4})
	require.NoError(t, err)
	require.Len(t, st.Projections, 4)
	assert.Equal(t, all[4].Position, st.Head)
	byName := map[string]views.ProjectionStatus{}
	for _, s := range st.Projections {
		byName[s.Name] = s
	}
	assert.Equal(t, []string{"ledger", "payments", "payouts", "reconciliation"},
		[]string{st.Projections[0].Name, st.Projections[1].Name, st.Projections[2].Name, st.Projections[3].Name})
	assert.Equal(t, int64(3), byName["ledger"].Lag)
	assert.False(t, byName["ledger"].LagCapped)
	assert.Equal(t, at, byName["ledger"].Position)
	assert.Equal(t, "live", byName["ledger"].Status)
	assert.Equal(t, int64(4), byName["payments"].Lag, "capped at 4")
	assert.True(t, byName["payments"].LagCapped)
	assert.Equal(t, "cannot apply", byName["payments"].LastError)
	assert.Equal(t, &all[0].Position, byName["payments"].ErrorPosition)
	assert.Equal(t, int64(4), byName["reconciliation"].Lag)
	assert.Nil(t, byName["reconciliation"].ErrorPosition)
	assert.Equal(t, map[string]int64{"applied": 2, "received": 1, "ignored": 0, "unverified": 0, "invalid": 0, "verified": 0, "failed": 0}, st.Inbox)

	st, err = projections.Status(ctx, store, db, projections.StatusOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(5), st.Projections[1].Lag, "uncapped")
	assert.False(t, st.Projections[1].LagCapped)
	assert.Nil(t, st.Inbox, "not asked for")
}
