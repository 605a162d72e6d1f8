package projections_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/projections"
)

// TestProjectorsBehindCatchUpInBulk: projectors that find a backlog
// (their batch comes back full) take batches of behindFactor times their
// size until they are caught up, each still one transaction with its
// checkpoint; the tables they leave are the independent model's, and
// equal to a replay from scratch, as with per-batch catch-up (issue 40
// item 4).
func TestProjectorsBehindCatchUpInBulk(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(4)
	f.apply(ctx, g.payments(150))
	events := len(f.feed(ctx))

	const size = 10
	db := &countingDB{Store: f.db}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, p := range projections.Default() {
		pj := projections.NewProjector(p, f.es, db, nil)
		projections.SetBatchSize(pj, size)
		wg.Go(func() { assert.NoError(t, pj.Run(rctx), pj.Name()) })
	}
	f.waitCaughtUp(ctx)
	cancel()
	wg.Wait()

	// Per-batch catch-up would have taken events/size batches per
	// projection; in bulk, a quarter of that and the first one.
	projs := int64(len(projections.Default()))
	perProjection := float64(db.batches.Load()) / float64(projs)
	t.Logf("%d events: %.1f batches per projection (batch %d)", events, perProjection, size)
	assert.Less(t, perProjection, float64(events)/size/2, "a backlog is caught up in bigger batches")

	g.m.checkBalances(t, f.balances(ctx))
	f.checkPayments(ctx, g.m)
	f.checkReconciliation(ctx, g.m)
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences, "the live tables against a replay from scratch")
}
