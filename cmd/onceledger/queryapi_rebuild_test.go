package main

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
)

// TestQueryLedgerExportAcrossRebuild pages through /v1/ledger/entries while
// rebuilds swap new tables in (which renumbers the id column), add new
// entries, and repair a damaged table: the export sees every entry exactly
// once, in the order of the full list, because the cursor names the entry
// by its stable key.
func TestQueryLedgerExportAcrossRebuild(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	rmPool, err := postgres.NewReadModelPool(ctx, pool)
	require.NoError(t, err)
	t.Cleanup(rmPool.Close)
	svc := projections.NewService(store, readmodel.New(rmPool), nil)
	a := startQAPI(t, pool, httpapi.Config{APITokens: []string{qToken1}})

	payments := 0
	addPayments := func(n int) {
		for range n {
			payments++
			meta := payment.Meta{Provider: "stripe", PaymentKey: fmt.Sprintf("pi_%d", payments), OccurredAt: qT0}
			var data []eventstore.EventData
			for _, e := range []payment.Event{
				payment.Captured{Meta: meta, CaptureID: "ch_" + meta.PaymentKey, Amount: 1000 + int64(payments), Fee: 30, Currency: "USD"},
				payment.RefundPosted{Meta: meta, RefundID: "re_" + meta.PaymentKey, Amount: 100, Currency: "USD"},
			} {
				typ, b, err := payment.Encode(e)
				require.NoError(t, err)
				data = append(data, eventstore.EventData{ID: uuid.New(), Type: typ, Data: b})
			}
			_, err := store.Append(ctx, "payment-stripe-"+meta.PaymentKey, eventstore.NoStream, data)
			require.NoError(t, err)
		}
	}
	rebuild := func(swapAll bool) {
		rep, err := svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: 7, SwapAll: swapAll})
		require.NoError(t, err)
		require.True(t, rep.Swapped)
	}
	type entry struct {
		key string
		id  int64
	}
	list := func(path string) ([]entry, string) {
		var p qPage
		a.getJSON(path, &p)
		require.NotNil(t, p.NextCursor)
		var out []entry
		for _, e := range p.Entries {
			out = append(out, entry{key: fmt.Sprintf("%s/%d@%d/%d", e.EventID, e.PostingIndex, e.Position.Commit, e.Position.Prepare), id: e.ID})
		}
		return out, *p.NextCursor
	}

	addPayments(20)
	rebuild(false) // fills the empty live tables
	before, _ := list("/v1/ledger/entries?limit=1000")
	require.NotEmpty(t, before)
	require.Zero(t, len(before)%20, "every payment posts the same entries")

	var export []entry
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100, "paging must end")
		page, next := list("/v1/ledger/entries?limit=9&cursor=" + url.QueryEscape(cursor))
		export = append(export, page...)
		switch pages {
		case 2:
			// Mid-export: a rebuild replaces the tables by new ones; ids
			// renumber.
			rebuild(true)
			after, _ := list("/v1/ledger/entries?limit=1000")
			require.Len(t, after, len(before))
			assert.NotEqual(t, before[0].id, after[0].id, "the swap renumbered the ids")
		case 5:
			// New facts, then another rebuild (which adds their rows to
			// the live tables in place): they come after everything.
			addPayments(3)
			rebuild(false)
		case 7:
			// A live table damaged mid-export: the rebuild repairs it.
			_, err := pool.Exec(ctx, `DELETE FROM ledger_entries WHERE id IN (SELECT id FROM ledger_entries ORDER BY id DESC LIMIT 3)`)
			require.NoError(t, err)
			rebuild(false)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	full, _ := list("/v1/ledger/entries?limit=1000")
	require.Len(t, full, len(before)/20*23)
	keys := func(es []entry) []string {
		out := make([]string, len(es))
		for i, e := range es {
			out[i] = e.key
		}
		return out
	}
	assert.Equal(t, keys(full), keys(export), "the export is the full list: nothing repeated, nothing skipped")
}
