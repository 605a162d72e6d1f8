package outbox

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections/outbound"
)

func line(i int, payout string) outbound.Event {
	return outbound.Event{ID: uuid.New(), Type: outbound.SettlementLine, Version: 1, Provider: "stripe",
		Stream: fmt.Sprintf("payment-stripe-pi_%d", i), Position: eventstore.Position{Commit: uint64(i + 1)},
		Data: map[string]any{"payout_id": payout}}
}

// settlement.line is off unless listed; listed, lines come in batches of
// at most MaxBatch per payout, in feed order, on the payout's key, and the
// other events one by one on their streams.
func TestQueueRowsBatchesSettlementLines(t *testing.T) {
	var evs []outbound.Event
	for i := range 250 {
		evs = append(evs, line(i, "po_1"))
	}
	evs = append(evs, line(250, "po_2"))
	cap := outbound.Event{ID: uuid.New(), Type: outbound.PaymentCaptured, Version: 1, Provider: "stripe", Stream: "payment-stripe-pi_x",
		Position: eventstore.Position{Commit: 999}, Data: map[string]any{}}
	evs = append(evs, cap)

	rows, err := queueRows(Filter{}, LaneLive, evs, time.Time{})
	require.NoError(t, err)
	require.Len(t, rows, 1, "no types: settlement.line is not sent")
	assert.Equal(t, cap.ID, rows[0].EventID)

	rows, err = queueRows(Filter{Types: []string{outbound.SettlementLine, outbound.PaymentCaptured}}, LaneLive, evs, time.Time{})
	require.NoError(t, err)
	var sizes []int
	seen := 0
	for _, r := range rows {
		if r.EventType != BatchType {
			assert.Equal(t, "payment-stripe-pi_x", r.StreamKey)
			continue
		}
		var b Batch
		require.NoError(t, json.Unmarshal(r.Body, &b))
		assert.Equal(t, b.ID, r.EventID)
		assert.Equal(t, "settlement-lines:"+b.PayoutID, r.StreamKey)
		sizes = append(sizes, len(b.Events))
		for _, e := range b.Events {
			if b.PayoutID == "po_1" {
				assert.Equal(t, evs[seen].ID, e.ID, "feed order")
				seen++
			}
		}
	}
	assert.Equal(t, []int{100, 100, 50, 1}, sizes)
	assert.Equal(t, 250, seen)
}

// The schedule: about 5 s … 10 h with jitter, then no more.
func TestScheduleThenGiveUp(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at, ok := next(now, 1, func() float64 { return 0 })
	require.True(t, ok)
	assert.Equal(t, now.Add(4*time.Second), at) // 5 s −20%
	at, ok = next(now, 7, func() float64 { return 0.999999 })
	require.True(t, ok)
	assert.InDelta(t, float64(12*time.Hour), float64(at.Sub(now)), float64(time.Second))
	_, ok = next(now, MaxAttempts, func() float64 { return 0.5 })
	assert.False(t, ok)
}
