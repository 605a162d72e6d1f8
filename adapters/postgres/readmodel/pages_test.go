package readmodel_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections/views"
)

// The paged lists (the console's) are keyset pages: walking them page by
// page yields every matching row exactly once, in order, also when many
// rows share a timestamp, and filters narrow them.
func TestPaymentsKeysetPages(t *testing.T) {
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
	c := readmodel.New(pool)

	walk := func(f views.PaymentFilter) []views.Payment {
		var all []views.Payment
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
	all := walk(views.PaymentFilter{})
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
	assert.Len(t, walk(views.PaymentFilter{Provider: "adyen"}), 115)
	assert.Len(t, walk(views.PaymentFilter{Currency: "EUR", Status: "captured"}), len(filter(all, func(p views.Payment) bool {
		return p.Summary.Currency == "EUR" && p.Status == "captured"
	})))
	assert.Len(t, walk(views.PaymentFilter{From: base.Add(5 * time.Hour), To: base.Add(7 * time.Hour)}), 20)
	pct := walk(views.PaymentFilter{PaymentID: "pay_%"})
	require.Len(t, pct, 1, "a LIKE metacharacter in the prefix is literal")
	assert.Equal(t, "pay_%_x", pct[0].PaymentID)
	assert.Len(t, walk(views.PaymentFilter{PaymentID: "pay_1"}), 100)
}

func TestReconInboxPayoutsAndActivityPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	exec(t, pool, `INSERT INTO reconciliation_items (stream_id, kind, item_key, status, provider, payment_id, details, opened_at, resolved_at) VALUES
		('payment-stripe-a', 'over_refund', 'k1', 'open', 'stripe', 'a', 'd', NULL, NULL),
		('payment-stripe-b', 'over_refund', 'k1', 'open', 'stripe', 'b', 'd', $1, NULL),
		('payment-adyen-c', 'amount_mismatch', 'k2', 'resolved', 'adyen', 'c', 'd', $2, $1),
		('payment-adyen-d', 'over_refund', 'k3', 'open', 'adyen', 'd', 'd', $2, NULL)`, now.Add(-48*time.Hour), now.Add(-time.Hour))
	c := readmodel.New(pool)

	items := func(f views.ReconciliationFilter) []views.ReconciliationItem {
		var out []views.ReconciliationItem
		require.NoError(t, c.Reconciliation(ctx, f, func(it views.ReconciliationItem) error {
			out = append(out, it)
			return nil
		}))
		return out
	}
	var order []string
	f := views.ReconciliationFilter{Limit: 1}
	for {
		page := items(f)
		if len(page) == 0 {
			break
		}
		order = append(order, page[0].PaymentID)
		k := page[0].Position()
		f.After = &k
	}
	assert.Equal(t, []string{"a", "b", "c", "d"}, order, "oldest first, unknown opening first")
	assert.Len(t, items(views.ReconciliationFilter{Status: "open", Kind: "over_refund", Provider: "stripe", Limit: 10}), 2)
	assert.Len(t, items(views.ReconciliationFilter{OpenedBefore: now.Add(-24 * time.Hour)}), 2,
		"the one opened 48h ago and the one of unknown age")
	assert.Len(t, items(views.ReconciliationFilter{StreamID: "payment-adyen-c"}), 1)

	for i := range 12 {
		status := []string{"applied", "ignored", "applied"}[i%3]
		exec(t, pool, `INSERT INTO webhook_inbox (provider, dedup_key, event_type, stream_id, payload_hash, raw_body, status, first_seen_at)
			VALUES ($1, $2, 'payment.captured', $3, 'h', $4, $5, $6)`,
			[]string{"stripe", "adyen"}[i%2], fmt.Sprintf("evt_%02d", i), "payment-x-"+fmt.Sprint(i%4),
			[]byte(`{"n":1}`), status, now.Add(-time.Duration(i/4)*24*time.Hour))
	}
	var inbox []views.InboxRow
	fi := views.InboxFilter{Limit: 5}
	for {
		page, err := c.Deliveries(ctx, fi)
		require.NoError(t, err)
		inbox = append(inbox, page...)
		if len(page) < fi.Limit {
			break
		}
		k := page[len(page)-1].Key()
		fi.After = &k
	}
	assert.Len(t, inbox, 12)
	counts, err := c.DeliveryCounts(ctx, views.InboxFilter{Provider: "stripe"})
	require.NoError(t, err)
	assert.Equal(t, []views.InboxCount{{Provider: "stripe", Status: "applied", Count: 4}, {Provider: "stripe", Status: "ignored", Count: 2}}, counts)
	all, err := c.InboxCounts(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"applied": 8, "ignored": 4}, all, "the status's counts: every provider's, summed")
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
		(gen_random_uuid(), 0, 'payment-stripe-a', 'payment.captured', 'stripe', 'revenue:sales', 'USD', -7000, $1, $1, 2, 2, to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM')),
		(gen_random_uuid(), 1, 'payment-stripe-a', 'payment.captured', 'stripe', 'provider:stripe:balance', 'USD', 7000, $1, $1, 2, 2, to_char($1::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM'))`, now)
	vol, err := c.DailyVolume(ctx, now.AddDate(0, 0, -1), now.AddDate(0, 0, 1))
	require.NoError(t, err)
	require.Len(t, vol, 1)
	assert.Equal(t, int64(7000), vol[0].Captured)
}

// Payouts page most recent first (unknown arrival last) or in arrival
// order, by keyset, with the filters /v1 has and the console's currency.
func TestPayoutsPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	exec(t, pool, `INSERT INTO payouts (provider, payout_id, amount, currency, arrival_date, status, updated_at)
		SELECT CASE WHEN i % 2 = 0 THEN 'stripe' ELSE 'adyen' END, 'po_' || lpad(i::text, 2, '0'), 100 * i,
			CASE WHEN i % 3 = 0 THEN 'EUR' ELSE 'USD' END,
			CASE WHEN i < 3 THEN NULL ELSE $1::timestamptz + (i / 4) * interval '1 day' END,
			CASE WHEN i % 5 = 0 THEN 'mismatch' ELSE 'paid' END, now()
		FROM generate_series(0, 22) AS i`, base)
	s := readmodel.New(pool)
	walk := func(f views.PayoutFilter) []string {
		var ids []string
		f.Limit = 4
		for {
			var page []views.Payout
			require.NoError(t, s.Payouts(ctx, f, func(p views.Payout) error {
				page = append(page, p)
				return nil
			}))
			for _, p := range page {
				ids = append(ids, p.PayoutID)
			}
			if len(page) < f.Limit {
				return ids
			}
			k := page[len(page)-1].Key()
			f.After = &k
		}
	}
	all := walk(views.PayoutFilter{})
	require.Len(t, all, 23)
	assert.Equal(t, []string{"po_01", "po_00", "po_02"}, all[:3], "unknown arrival first, then provider, payout id")
	newest := walk(views.PayoutFilter{Newest: true})
	slices.Reverse(newest)
	assert.Equal(t, all, newest, "Newest is the reverse order")
	assert.Len(t, walk(views.PayoutFilter{Status: "mismatch"}), 5)
	assert.Len(t, walk(views.PayoutFilter{Currency: "EUR", Provider: "stripe"}), 4)
	assert.Len(t, walk(views.PayoutFilter{From: base.AddDate(0, 0, 1), To: base.AddDate(0, 0, 2)}), 4)
}

// Reads are safe from many goroutines at once (the front ends serve many
// clients on one pool).
func TestConcurrentPageReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	c := readmodel.New(pool)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			_, err := c.DeliveryCounts(ctx, views.InboxFilter{})
			assert.NoError(t, err)
			_, err = c.Payments(ctx, views.PaymentFilter{Limit: 10})
			assert.NoError(t, err)
			_, _, err = c.Delivery(ctx, "stripe", "nope")
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
