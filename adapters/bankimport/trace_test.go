package bankimport_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bankimport"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

// TestTraceIDLearnedLater: through the gate, the projections and the
// payouts read model. Two Stripe payouts of one amount and arrival date;
// the statement, imported first, holds one line naming po_B's trace id.
// Both payouts are paid with trace_id pending, so the line banks po_A
// (the tie-break); then payout.updated tells po_B's trace id: the next
// match moves the line to po_B, and po_A waits again.
func TestTraceIDLearnedLater(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	events := postgres.NewEventStore(pool)
	svc := ingest.New(postgres.NewJournal(pool, events), bankimport.Decider{Payments: ingest.PaymentDecider{}}, ingest.Options{})
	db := readmodel.New(pool)
	proj := projections.NewService(events, db, nil)
	im := &bankimport.Importer{Ingest: svc, Payouts: db}

	const trace = "091000019990002"
	doc := camt("camt.053", 1, day("2026-03-03"), 0, entry{amount: 5000, ref: "T1", text: "STRIPE TRANSFER TRACE " + trace})
	_, err := im.Import(ctx, "main", src(doc))
	require.NoError(t, err)
	for _, id := range []string{"po_A", "po_B"} {
		_, err := svc.Ingest(ctx, paid("stripe", id, 5000, day("2026-03-02"), day("2026-03-02")))
		require.NoError(t, err)
	}
	catchUp(t, proj)
	_, err = im.Match(ctx, "main")
	require.NoError(t, err)
	catchUp(t, proj)
	bankedBy := func(id string) (line, by string) {
		t.Helper()
		err := pool.QueryRow(ctx, `SELECT line_key, matched_by FROM bank_payouts WHERE provider = 'stripe' AND payout_id = $1`, id).Scan(&line, &by)
		if err != nil {
			return "", ""
		}
		return line, by
	}
	line, by := bankedBy("po_A")
	require.Equal(t, "ref:T1", line, "the tie-break, before the trace id is known")
	assert.Equal(t, "amount", by)

	upd := paid("stripe", "po_B", 5000, day("2026-03-04"), day("2026-03-02"))
	upd.DedupKey, upd.Type, upd.PayloadHash = "evt_po_B_updated", "payout.updated", "hB2"
	upd.Facts[0].TraceID = trace
	_, err = svc.Ingest(ctx, upd)
	require.NoError(t, err)
	catchUp(t, proj)
	var stored *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT trace_id FROM payouts WHERE provider = 'stripe' AND payout_id = 'po_B'`).Scan(&stored))
	require.NotNil(t, stored)
	assert.Equal(t, trace, *stored)
	told, err := im.Match(ctx, "main")
	require.NoError(t, err)
	assert.Equal(t, 1, told, "po_B, with its trace id")
	catchUp(t, proj)

	line, by = bankedBy("po_B")
	assert.Equal(t, "ref:T1", line)
	assert.Equal(t, "trace_id", by)
	line, _ = bankedBy("po_A")
	assert.Empty(t, line, "po_A waits for its line again")
	var payouts string
	require.NoError(t, pool.QueryRow(ctx, `SELECT payouts::text FROM bank_statement_lines WHERE account = 'main' AND line_key = 'ref:T1'`).Scan(&payouts))
	assert.JSONEq(t, `[{"provider":"stripe","id":"po_B","amount":5000}]`, payouts)
	left, err := db.UnbankedPayouts(ctx)
	require.NoError(t, err)
	require.Len(t, left, 1)
	assert.Equal(t, "po_A", left[0].ID)

	rep, err := proj.Rebuild(ctx, []string{projections.NamePayouts}, projections.RebuildOptions{VerifyOnly: true})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences, "the live tables are what history says")
}
