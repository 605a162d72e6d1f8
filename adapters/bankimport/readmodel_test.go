package bankimport_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bankimport"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/projections"
)

// catchUp steps every projector until none has an event left.
func catchUp(t *testing.T, svc *projections.Service) {
	t.Helper()
	for {
		moved := 0
		for _, p := range svc.Projectors() {
			n, err := p.Step(context.Background())
			require.NoError(t, err, p.Name())
			moved += n
		}
		if moved == 0 {
			return
		}
	}
}

func paid(provider, id string, amount int64, at, arrival time.Time) delivery.Event {
	return delivery.Event{Provider: provider, DedupKey: "evt_" + id, Type: "payout.paid", OccurredAt: at,
		PayloadHash: "h" + id, Raw: []byte(`{}`),
		Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: id, Amount: amount, Currency: "EUR", ArrivalDate: arrival}}}
}

// TestReadModelsAndRebuild: the ledger, the items and the bank read models
// after an import, the payouts' banked status from the payouts read model
// (the importer's port), and a rebuild that finds the live tables equal to
// history.
func TestReadModelsAndRebuild(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	events := postgres.NewEventStore(pool)
	svc := ingest.New(postgres.NewJournal(pool, events), bankimport.Decider{Payments: ingest.PaymentDecider{}}, ingest.Options{})
	db := readmodel.New(pool)
	proj := projections.NewService(events, db, nil)

	// po_1 was reported paid on 20 February to arrive on 2 March (Stripe's
	// arrival_date): the window starts at the provider's arrival date, not
	// at the event (20 February + 5 business days would miss 3 March).
	for _, ev := range []delivery.Event{paid("stripe", "po_1", 10000, day("2026-02-20"), day("2026-03-02")),
		paid("adyen", "TX1XT", 2500, day("2026-03-02"), time.Time{})} {
		_, err := svc.Ingest(ctx, ev)
		require.NoError(t, err)
	}
	catchUp(t, proj)
	im := &bankimport.Importer{Ingest: svc, Payouts: db,
		Asserter: operations.NewBalances(events, operations.NewPeriods(events, time.UTC, nil), db, nil)}
	doc := camt("camt.053", 1, day("2026-03-03"), 0,
		entry{amount: 10000, ref: "B1", text: "STRIPE po_1"}, entry{amount: 777, ref: "B2", text: "who?"})
	sum, err := im.Import(ctx, "main", src(doc))
	require.NoError(t, err)
	assert.Equal(t, bankimport.Summary{Format: "camt.053", Lines: 2, New: 2, Statements: 1, Payouts: 2}, sum)
	catchUp(t, proj)

	var bankMain, payoutsBal, suspense int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT
		coalesce((SELECT balance FROM account_balances WHERE account = 'bank:main' AND currency = 'EUR'), 0),
		coalesce((SELECT balance FROM account_balances WHERE account = 'bank:payouts' AND currency = 'EUR'), 0),
		coalesce((SELECT balance FROM account_balances WHERE account = 'suspense:bank:main' AND currency = 'EUR'), 0)`).
		Scan(&bankMain, &payoutsBal, &suspense))
	assert.Equal(t, []int64{10777, 2500, -777}, []int64{bankMain, payoutsBal, suspense}, "bank:payouts holds adyen's payout, not banked")

	var kind, key string
	require.NoError(t, pool.QueryRow(ctx, `SELECT kind, item_key FROM reconciliation_items WHERE status = 'open'`).Scan(&kind, &key),
		"one open item in the whole ledger: no balance_mismatch")
	assert.Equal(t, []string{"unidentified_deposit", "ref:B2"}, []string{kind, key})

	var status, payouts string
	require.NoError(t, pool.QueryRow(ctx, `SELECT status, payouts::text FROM bank_statement_lines WHERE account = 'main' AND line_key = 'ref:B1'`).Scan(&status, &payouts))
	assert.Equal(t, "matched", status)
	assert.JSONEq(t, `[{"provider":"stripe","id":"po_1","amount":10000}]`, payouts)

	// The statement's balances are assertions on bank:main, compared by
	// booking date: opening 0.00 (OPBD of 3 March: before its lines),
	// closing 107.77 (with them); both agree with the ledger.
	arows, err := pool.Query(ctx, `SELECT as_of::date::text, stated, ledger FROM balance_assertions
		WHERE account = 'bank:main' AND currency = 'EUR' ORDER BY as_of`)
	require.NoError(t, err)
	var got [][3]any
	for arows.Next() {
		var d string
		var stated, ledgerBal int64
		require.NoError(t, arows.Scan(&d, &stated, &ledgerBal))
		got = append(got, [3]any{d, stated, ledgerBal})
	}
	require.NoError(t, arows.Err())
	assert.Equal(t, [][3]any{{"2026-03-02", int64(0), int64(0)}, {"2026-03-03", int64(10777), int64(10777)}}, got)

	accounts, err := db.BankAccounts(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"main"}, accounts)
	changed, err := db.PayoutsChangedAt(ctx)
	require.NoError(t, err)
	assert.False(t, changed.IsZero())

	// A payout that failed is listed as failed: the account stops
	// expecting it.
	_, err = svc.Ingest(ctx, paid("stripe", "po_f", 300, day("2026-03-02"), time.Time{}))
	require.NoError(t, err)
	_, err = svc.Ingest(ctx, delivery.Event{Provider: "stripe", DedupKey: "evt_po_f_failed", Type: "payout.failed",
		OccurredAt: day("2026-03-04"), PayloadHash: "hf", Raw: []byte(`{}`),
		Facts: []delivery.Fact{{Kind: delivery.KindPayoutFailed, BusinessID: "po_f", Amount: 300, Currency: "EUR"}}})
	require.NoError(t, err)
	catchUp(t, proj)
	left, err := db.UnbankedPayouts(ctx)
	require.NoError(t, err)
	require.Len(t, left, 2)
	assert.Equal(t, []string{"TX1XT", "po_f"}, []string{left[0].ID, left[1].ID})
	assert.Equal(t, []bool{false, true}, []bool{left[0].Failed, left[1].Failed})
	told, err := im.Match(ctx, "main")
	require.NoError(t, err)
	assert.Equal(t, 1, told, "po_f: told failed (TX1XT is known)")

	rep, err := proj.Rebuild(ctx, []string{projections.NamePayouts, projections.NameLedger, projections.NameReconciliation},
		projections.RebuildOptions{VerifyOnly: true})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences, "the live tables are what history says")
	rows := map[string]int64{}
	for _, tc := range rep.Tables {
		rows[tc.Table] = tc.RebuiltRows
	}
	assert.Equal(t, int64(2), rows["bank_statement_lines"])
	assert.Equal(t, int64(1), rows["bank_statements"])
	assert.Equal(t, int64(1), rows["bank_payouts"])
}
