package ingest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/payment"
)

// postbackFunc is a Postback that counts its calls.
type postbackFunc struct {
	calls  atomic.Int64
	answer func(raw []byte) bool
}

func (p *postbackFunc) Verify(_ context.Context, raw []byte) (bool, error) {
	p.calls.Add(1)
	return p.answer(raw), nil
}

// TestHeldPendingBytesBound: once the waiting candidates of a provider hold
// PendingBytes of raw bodies, further held deliveries, whatever their key,
// are verified inline: the forged ones are dropped unstored, the genuine
// one is recorded at once.
func TestHeldPendingBytesBound(t *testing.T) {
	pool := pgtest.NewPool(t)
	inbox := postgres.NewInbox(pool)
	pb := &postbackFunc{answer: func(raw []byte) bool { return !strings.Contains(string(raw), "forged") }}
	svc := ingest.New(postgres.NewJournal(pool, postgres.NewEventStore(pool)), ingest.PaymentDecider{}, ingest.Options{
		Hold: ingest.HoldOptions{Pending: inbox, Postback: pb, PerKey: 100, PendingBytes: 600},
	})
	queued := 0
	for i := range 20 {
		ev := withBody(capture("p"+strings.Repeat("x", i), "ipn_f"+strings.Repeat("x", i), 1000), "forged")
		res, err := svc.Hold(tctx(t), ev)
		require.NoError(t, err)
		if res.Outcome == ingest.Accepted {
			queued++
		} else {
			assert.Equal(t, ingest.Ignored, res.Outcome, "a forged delivery past the bound is dropped")
		}
	}
	assert.Less(t, queued, 20, "the pending bytes bound held")
	pending := scalar(t, pool, `SELECT COALESCE(sum(octet_length(raw_body)), 0) FROM webhook_inbox WHERE status = 'unverified'`)
	assert.LessOrEqual(t, pending, int64(600))
	assert.EqualValues(t, 20-queued, pb.calls.Load(), "every delivery past the bound was posted back inline")

	genuine := capture("pg", "ipn_genuine", 1000)
	res, err := svc.Hold(tctx(t), genuine)
	require.NoError(t, err)
	assert.Equal(t, ingest.Accepted, res.Outcome)
	assert.Equal(t, []string{payment.TypeCaptured}, types(t, postgres.NewEventStore(pool), stream("pg")), "recorded before the answer")
	wantInboxStatus(t, pool, "ipn_genuine", ingest.StatusApplied, "")
}
