package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi/stripefake"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/settlement"
)

func settleGlobals(url string) *globals {
	return &globals{ctx: context.Background(), log: slog.New(slog.DiscardHandler),
		cli: &cli{DatabaseURL: url, EventStore: "postgres"}}
}

func runImport(t *testing.T, g *globals, provider string, files ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := (&settleImportCmd{Provider: provider, Files: files}).run(g, 168*time.Hour, &out, nil)
	return out.String(), err
}

// `settle import` on the committed sample report (docs/settlement.md's
// walk-through): every line new, then every line a duplicate; a malformed
// file imports nothing and names line and column; status shows the import.
func TestSettleImportCommand(t *testing.T) {
	url := pgtest.NewDatabase(t)
	g := settleGlobals(url)
	sample := filepath.Join("..", "..", "docs", "samples", "stripe_payout_reconciliation.itemized.csv")

	out, err := runImport(t, g, "stripe", sample)
	require.NoError(t, err)
	assert.Contains(t, out, "4 lines read, 4 new")
	assert.Contains(t, out, "0 duplicates")
	out, err = runImport(t, g, "stripe", sample)
	require.NoError(t, err)
	assert.Contains(t, out, "4 lines read, 0 new (0 facts recorded), 4 duplicates")

	raw, err := os.ReadFile(sample)
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	require.NoError(t, os.WriteFile(bad, bytes.Replace(raw, []byte(",12.34,"), []byte(",12.3.4,"), 1), 0o600))
	before := countInbox(t, url)
	_, err = runImport(t, g, "stripe", bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing imported")
	assert.Contains(t, err.Error(), `line 4, column "gross"`)
	assert.Equal(t, before, countInbox(t, url))
	assert.Equal(t, 1, exitCode(err))

	var buf bytes.Buffer
	require.NoError(t, (&statusCmd{JSON: true}).run(g, &buf))
	var v statusView
	require.NoError(t, json.Unmarshal(buf.Bytes(), &v), buf.String())
	assert.Contains(t, v.LastImports, "stripe")
	buf.Reset()
	require.NoError(t, (&statusCmd{}).run(g, &buf))
	assert.Contains(t, buf.String(), "SETTLEMENT IMPORTS")
	assert.Contains(t, buf.String(), "OPEN RECONCILIATION ITEMS")
}

func countInbox(t *testing.T, url string) int64 {
	t.Helper()
	a, err := app.New(context.Background(), app.Config{DatabaseURL: url})
	require.NoError(t, err)
	defer a.Close()
	var n int64
	require.NoError(t, a.Pool().QueryRow(context.Background(), `SELECT count(*) FROM webhook_inbox`).Scan(&n))
	return n
}

// A backfilled event and its webhook are one delivery: the API renders the
// event in other bytes than the webhook did, and the inbox compares facts,
// so the backfill finds a plain duplicate (no conflict); an event whose
// webhook never came is recorded.
func TestBackfillStripeAndItsWebhookAreOneDelivery(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	a, err := app.New(ctx, app.Config{DatabaseURL: url})
	require.NoError(t, err)
	defer a.Close()

	created := time.Now().Add(-time.Hour).Unix()
	event := func(id, ch, pi string, pending int, indent bool) []byte {
		b := fmt.Appendf(nil, `{"id":%q,"object":"event","type":"charge.succeeded","created":%d,"pending_webhooks":%d,"data":{"object":{"id":%q,"object":"charge","payment_intent":%q,"amount":1500,"amount_captured":1500,"captured":true,"currency":"usd"}}}`,
			id, created, pending, ch, pi)
		if indent {
			var out bytes.Buffer
			require.NoError(t, json.Indent(&out, b, "", "  "))
			return out.Bytes()
		}
		return b
	}
	webhook, err := stripe.NormalizeEvent(event("evt_bf_1", "ch_bf_1", "pi_bf_1", 1, false))
	require.NoError(t, err)
	res, err := a.Service().Ingest(ctx, webhook[0])
	require.NoError(t, err)
	require.Equal(t, "accepted", string(res.Outcome))

	fake := stripefake.New("sk_test_backfill")
	require.NoError(t, fake.AddEvent(event("evt_bf_1", "ch_bf_1", "pi_bf_1", 0, true))) // the API's rendering
	require.NoError(t, fake.AddEvent(event("evt_bf_2", "ch_bf_2", "pi_bf_2", 0, true))) // its webhook never came
	srv := httptest.NewServer(fake)
	defer srv.Close()
	client, err := stripeapi.New(srv.URL, "sk_test_backfill", srv.Client())
	require.NoError(t, err)

	sum, err := Backfill(ctx, a.Service(), client, time.Unix(created, 0).Add(-time.Minute))
	require.NoError(t, err)
	assert.Equal(t, BackfillSummary{Read: 2, New: 1, Duplicates: 1}, sum)
	var conflicts, events int64
	require.NoError(t, a.Pool().QueryRow(ctx, `SELECT coalesce(sum(conflict_count), 0) FROM webhook_inbox`).Scan(&conflicts))
	assert.Zero(t, conflicts, "a backfilled event is not a conflicting redelivery of its webhook")
	require.NoError(t, a.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE type = 'payment.captured'`).Scan(&events))
	assert.Equal(t, int64(2), events, "each capture recorded once")

	again, err := Backfill(ctx, a.Service(), client, time.Unix(created, 0).Add(-time.Minute))
	require.NoError(t, err)
	assert.Equal(t, BackfillSummary{Read: 2, Duplicates: 2}, again)
}

// `settle sync stripe --payout` pulls the payout's balance transactions
// from the API (the protocol double here) and imports them like a report:
// a second sync changes nothing.
func TestSettleSyncStripe(t *testing.T) {
	url := pgtest.NewDatabase(t)
	g := settleGlobals(url)
	fake := stripefake.New("sk_test_sync")
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for i := range 3 {
		l := settlement.Line{Provider: "stripe", Kind: settlement.KindCharge, SourceType: "charge", LineID: fmt.Sprintf("txn_sync_%d", i),
			PaymentKey: fmt.Sprintf("pi_sync_%d", i), CaptureID: fmt.Sprintf("ch_sync_%d", i), Gross: 1000, Fee: 59, Net: 941,
			Currency: "USD", OriginalAmount: 1000, OriginalCurrency: "USD", PayoutID: "po_sync", OccurredAt: at}
		require.NoError(t, fake.AddBalanceTransaction("po_sync", stripefake.BalanceTransaction(l)))
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cmd := &settleSyncStripeCmd{Config: stripeapi.Config{APIKey: "sk_test_sync", APIBase: srv.URL}, Payout: "po_sync"}
	parent := &settleCmd{UnsettledAfter: 168 * time.Hour}
	require.NoError(t, cmd.Run(g, parent))
	require.NoError(t, cmd.Run(g, parent))

	a, err := app.New(context.Background(), app.Config{DatabaseURL: url})
	require.NoError(t, err)
	defer a.Close()
	var lines, captures int64
	require.NoError(t, a.Pool().QueryRow(context.Background(),
		`SELECT count(*), sum(delivery_count) FROM webhook_inbox WHERE event_type = 'settlement.charge'`).Scan(&lines, new(int64)))
	assert.Equal(t, int64(3), lines)
	require.NoError(t, a.Pool().QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = 'payment.captured'`).Scan(&captures))
	assert.Equal(t, int64(3), captures, "each capture recorded once, from its line")
}

// settle sync stripe imports a payout holding a partial capture (issue 24,
// item 5): the Balance Transactions list is no longer refused whole; both
// of the charge's transactions are recorded, and the payout's lines add up
// to what Stripe paid (60.00 captured less the 2.04 fee).
func TestSettleSyncStripePartialCapture(t *testing.T) {
	url := pgtest.NewDatabase(t)
	g := settleGlobals(url)
	fake := stripefake.New("sk_test_sync")
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	l := settlement.Line{Provider: "stripe", Kind: settlement.KindCharge, SourceType: "charge", LineID: "txn_pc_charge",
		PaymentKey: "pi_pc", CaptureID: "ch_pc", Gross: 10000, Fee: 204, Net: 9796,
		Currency: "USD", OriginalAmount: 10000, OriginalCurrency: "USD", PayoutID: "po_pc", OccurredAt: at}
	charge, reversal := stripefake.PartialCapture(l, 6000, "txn_pc_reversal", "re_pc")
	require.NoError(t, fake.AddBalanceTransaction("po_pc", charge))
	require.NoError(t, fake.AddBalanceTransaction("po_pc", reversal))
	srv := httptest.NewServer(fake)
	defer srv.Close()
	cmd := &settleSyncStripeCmd{Config: stripeapi.Config{APIKey: "sk_test_sync", APIBase: srv.URL}, Payout: "po_pc"}
	require.NoError(t, cmd.Run(g, &settleCmd{UnsettledAfter: 168 * time.Hour}))

	a, err := app.New(context.Background(), app.Config{DatabaseURL: url})
	require.NoError(t, err)
	defer a.Close()
	var lines, net int64
	require.NoError(t, a.Pool().QueryRow(context.Background(),
		`SELECT count(*), coalesce(sum((normalized #>> '{facts,0,settlement,Net}')::bigint), 0) FROM webhook_inbox
		 WHERE event_type LIKE 'settlement.%' AND dedup_key LIKE 'settle:txn_pc_%'`).Scan(&lines, &net))
	assert.Equal(t, int64(2), lines)
	assert.Equal(t, int64(6000-204), net)
}
