package postgres_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
)

// recCapture is a verified capture delivery with body as its bytes.
func recCapture(id, body string) delivery.Event { return recCaptureOf(id, body, 1000) }

// recCaptureOf is recCapture of amount.
func recCaptureOf(id, body string, amount int64) delivery.Event {
	sum := sha256.Sum256([]byte(body))
	return delivery.Event{Provider: "paypal", DedupKey: id, Type: "PAYMENT.CAPTURE.COMPLETED", PaymentKey: "pay_1",
		OccurredAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), PayloadHash: hex.EncodeToString(sum[:]), Raw: []byte(body),
		Facts: []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "cap_1", Amount: amount, Fee: 30, Currency: "USD"}}}
}

// TestRecorderConflictWhileUnverified: a held IPN redelivered with another
// payload is kept in webhook_conflicts but not flagged on the stream (the
// flag carries the dedup key and would make the aggregate skip the held
// delivery once verified); the verified IPN then posts.
func TestRecorderConflictWhileUnverified(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := testCtx(t)
	store := postgres.NewEventStore(pool)
	svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{})

	// A held delivery is an unverified candidate: it never owns the key, so
	// a verified delivery of the key is its first arrival (issue 13).
	held := recCapture("ipn_1", "first")
	res, err := svc.Hold(ctx, held)
	require.NoError(t, err, "hold: %+v, %v", res, err)
	require.EqualValues(t, ingest.Accepted, res.Outcome, "hold: %+v, %v", res, err)
	res, err = svc.Ingest(ctx, recCaptureOf("ipn_1", "second", 900))
	require.NoError(t, err, "verified delivery: %+v, %v", res, err)
	require.EqualValues(t, ingest.Accepted, res.Outcome, "verified delivery: %+v, %v", res, err)

	// Confirmed later, the candidate is a redelivery with other facts: a
	// conflict, kept for reconciliation; the first verified facts stand.
	res, err = svc.Redrive(ctx, ingest.InboxKey{Provider: "paypal", DedupKey: ingest.CandidateKey("ipn_1", held.PayloadHash)}, ingest.StatusUnverified)
	require.NoError(t, err, "redrive: %+v, %v", res, err)
	require.EqualValues(t, ingest.Duplicate, res.Outcome, "redrive: %+v, %v", res, err)
	require.True(t, res.Conflict, "redrive: %+v, %v", res, err)
	var conflicts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_conflicts WHERE dedup_key = 'ipn_1'`).Scan(&conflicts))
	require.EqualValues(t, 1, conflicts)
	evs, err := store.ReadStream(ctx, held.StreamID())
	require.NoError(t, err, "stream %v, %v", evs, err)
	require.NotEmpty(t, evs)
	require.EqualValues(t, payment.TypeCaptured, evs[0].Type, "stream %v, %v", evs, err)
}
