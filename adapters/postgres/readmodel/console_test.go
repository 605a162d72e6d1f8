package readmodel_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/console"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

// The console's lists are keyset pages: walking them page by page yields
// every matching row exactly once, in order, also when many rows share a
// timestamp, and filters narrow them.
func TestConsolePaymentsKeysetPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var rows [][]any
	for i := range 230 {
		// Groups of 10 share updated_at; two providers; ids with LIKE
		// metacharacters.
		prov := []string{"stripe", "adyen"}[i%2]
		id := fmt.Sprintf("pay_%03d", i)
		if i == 7 {
			id = "pay_%_x"
		}
		rows = append(rows, []any{prov, id, "payment-" + prov + "-" + id, []string{"captured", "refunded"}[i%3/2],
			[]string{"USD", "EUR"}[i%2], int64(1000 + i), int64(i), base.Add(time.Duration(i/10) * time.Hour)})
	}
	_, err := pool.CopyFrom(ctx, pgx.Identifier{"payments"},
		[]string{"provider", "payment_id", "stream_id", "status", "currency", "captured_amount", "version", "updated_at"},
		pgx.CopyFromRows(rows))
	require.NoError(t, err)
	c := readmodel.NewConsole(pool, readmodel.ConsoleOptions{})

	walk := func(f console.PaymentFilter) []console.Payment {
		var all []console.Payment
		f.Limit = 7
		for {
			page, err := c.Payments(ctx, f)
			require.NoError(t, err)
			all = append(all, page...)
			if len(page) < f.Limit {
				return all
			}
			k := page[len(page)-1].Key()
			f.After = &k
		}
	}
	all := walk(console.PaymentFilter{})
	require.Len(t, all, 230)
	seen := map[string]bool{}
	for i, p := range all {
		assert.False(t, seen[p.Provider+p.PaymentID], "%s listed twice", p.PaymentID)
		seen[p.Provider+p.PaymentID] = true
		if i > 0 {
			prev := all[i-1]
			assert.False(t, p.UpdatedAt.After(prev.UpdatedAt), "most recent first")
		}
	}
	assert.Len(t, walk(console.PaymentFilter{Provider: "adyen"}), 115)
	assert.Len(t, walk(console.PaymentFilter{Currency: "EUR", Status: "captured"}), len(filter(all, func(p console.Payment) bool {
		return p.Currency == "EUR" && p.Status == "captured"
	})))
	assert.Len(t, walk(console.PaymentFilter{From: base.Add(5 * time.Hour), To: base.Add(7 * time.Hour)}), 20)
	pct := walk(console.PaymentFilter{PaymentID: "pay_%"})
	require.Len(t, pct, 1, "a LIKE metacharacter in the prefix is literal")
	assert.Equal(t, "pay_%_x", pct[0].PaymentID)
	assert.Len(t, walk(console.PaymentFilter{PaymentID: "pay_1"}), 100)
}

func TestConsoleReconInboxPayoutsAndOverview(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	exec(t, pool, `INSERT INTO reconciliation_items (stream_id, kind, item_key, status, provider, payment_id, details, opened_at, resolved_at) VALUES
		('payment-stripe-a', 'over_refund', 'k1', 'open', 'stripe', 'a', 'd', NULL, NULL),
		('payment-stripe-b', 'over_refund', 'k1', 'open', 'stripe', 'b', 'd', $1, NULL),
		('payment-adyen-c', 'amount_mismatch', 'k2', 'resolved', 'adyen', 'c', 'd', $2, $1),
		('payment-adyen-d', 'over_refund', 'k3', 'open', 'adyen', 'd', 'd', $2, NULL)`, now.Add(-48*time.Hour), now.Add(-time.Hour))
	c := readmodel.NewConsole(pool, readmodel.ConsoleOptions{})

	var order []string
	var f console.ReconFilter
	f.Limit = 1
	for {
		page, err := c.ReconItems(ctx, f)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		order = append(order, page[0].PaymentID)
		k := page[0].Key()
		f.After = &k
	}
	assert.Equal(t, []string{"a", "b", "c", "d"}, order, "oldest first, unknown opening first")
	open, err := c.ReconItems(ctx, console.ReconFilter{Status: "open", Kind: "over_refund", Provider: "stripe", Limit: 10})
	require.NoError(t, err)
	assert.Len(t, open, 2)
	old, err := c.ReconItems(ctx, console.ReconFilter{OpenedBefore: now.Add(-24 * time.Hour), Limit: 10})
	require.NoError(t, err)
	assert.Len(t, old, 2, "the one opened 48h ago and the one of unknown age")

	for i := range 12 {
		status := []string{"applied", "ignored", "applied"}[i%3]
		exec(t, pool, `INSERT INTO webhook_inbox (provider, dedup_key, event_type, stream_id, payload_hash, raw_body, status, first_seen_at)
			VALUES ($1, $2, 'payment.captured', $3, 'h', $4, $5, $6)`,
			[]string{"stripe", "adyen"}[i%2], fmt.Sprintf("evt_%02d", i), "payment-x-"+fmt.Sprint(i%4),
			[]byte(`{"n":1}`), status, now.Add(-time.Duration(i/4)*24*time.Hour))
	}
	var inbox []console.InboxRow
	fi := console.InboxFilter{Limit: 5}
	for {
		page, err := c.Inbox(ctx, fi)
		require.NoError(t, err)
		inbox = append(inbox, page...)
		if len(page) < fi.Limit {
			break
		}
		k := page[len(page)-1].Key()
		fi.After = &k
	}
	assert.Len(t, inbox, 12)
	counts, err := c.InboxCounts(ctx, console.InboxFilter{Provider: "stripe"})
	require.NoError(t, err)
	assert.Equal(t, []console.StatusCount{{Status: "applied", Count: 4}, {Status: "ignored", Count: 2}}, counts)
	d, found, err := c.Delivery(ctx, "stripe", "evt_00")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, `{"n":1}`, string(d.Raw))
	_, found, err = c.Delivery(ctx, "stripe", "nope")
	require.NoError(t, err)
	assert.False(t, found)
	mix, err := c.InboxMix(ctx, now.AddDate(0, 0, -10), now.Add(time.Hour))
	require.NoError(t, err)
	var total int64
	for _, m := range mix {
		total += m.Count
	}
	assert.Equal(t, int64(12), total)

	exec(t, pool, `INSERT INTO ledger_entries (event_id, posting_index, stream_id, event_type, provider, account, currency, amount, occurred_at, recorded_at, position_commit, position_prepare, period) VALUES
		(gen_random_uuid(), 0, 'payout-stripe-po_1', 'payout.paid', 'stripe', 'bank:payouts', 'USD', 5000, $1, $1, 1, 1, to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM')),
		(gen_random_uuid(), 1, 'payout-stripe-po_1', 'payout.paid', 'stripe', 'provider:stripe:balance', 'USD', -5000, $1, $1, 1, 1, to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM')),
		(gen_random_uuid(), 0, 'payment-stripe-a', 'payment.captured', 'stripe', 'revenue:sales', 'USD', -7000, $1, $1, 2, 2, to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM')),
		(gen_random_uuid(), 1, 'payment-stripe-a', 'payment.captured', 'stripe', 'provider:stripe:balance', 'USD', 7000, $1, $1, 2, 2, to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM'))`, now)
	exec(t, pool, `INSERT INTO account_balances (account, currency, balance, entry_count, updated_at) VALUES
		('bank:payouts', 'USD', 5000, 1, now()), ('provider:stripe:balance', 'USD', 2000, 2, now()),
		('revenue:sales', 'USD', -7000, 1, now()), ('revenue:sales', 'EUR', -10, 1, now())`)
	payouts, err := c.Payouts(ctx, console.PayoutFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, payouts, 1)
	assert.Equal(t, console.Payout{Provider: "stripe", PayoutID: "po_1", StreamID: "payout-stripe-po_1", Amount: 5000,
		Currency: "USD", At: payouts[0].At, Status: "paid"}, payouts[0])
	vol, err := c.DailyVolume(ctx, now.AddDate(0, 0, -1), now.AddDate(0, 0, 1))
	require.NoError(t, err)
	require.Len(t, vol, 1)
	assert.Equal(t, int64(7000), vol[0].Captured)

	ov, err := c.Overview(ctx)
	require.NoError(t, err)
	assert.Equal(t, []console.TrialBalance{{Currency: "EUR", Debits: 0, Credits: 10}, {Currency: "USD", Debits: 7000, Credits: 7000}}, ov.Trial)
	assert.False(t, ov.Trial[0].Balanced())
	assert.True(t, ov.Trial[1].Balanced())
	assert.Equal(t, []console.KindCount{{Kind: "over_refund", Count: 3}}, ov.OpenItems)
	assert.Len(t, ov.Projections, len(projections.Default()))
	assert.Len(t, ov.Inbox, 4)
}

// Reads are safe from many goroutines at once (the console serves many
// browsers on one pool).
func TestConsoleConcurrentReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	c := readmodel.NewConsole(pool, readmodel.ConsoleOptions{})
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			_, err := c.Overview(ctx)
			assert.NoError(t, err)
			_, err = c.Payments(ctx, console.PaymentFilter{Limit: 10})
			assert.NoError(t, err)
			_, _, err = c.Timeline(ctx, "stripe", "nope")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	_, err := pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

func filter[T any](xs []T, keep func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}
