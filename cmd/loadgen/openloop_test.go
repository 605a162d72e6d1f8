package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/scenario"
)

// In open loop a delivery's latency counts from its scheduled slot: a send
// that left late (every sender busy) carries the time it waited. Closed loop
// measures from the send itself.
func TestOpenLoopLatencyCountsFromTheSchedule(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"accepted"}`))
	}))
	defer srv.Close()
	d := &scenario.Delivery{Provider: scenario.Stripe, ID: "evt_1", Type: "payout.paid", Body: []byte(`{}`)}
	slot := time.Now().Add(-300 * time.Millisecond) // the slot passed while no sender was free

	for _, openLoop := range []bool{true, false} {
		s := &sender{base: srv.URL, client: srv.Client(), stripeSecret: testStripeSecret, maxAttempts: 1,
			ans: newAnswers(), openLoop: openLoop, logf: func(string, ...any) {}}
		require.True(t, s.deliverAt(context.Background(), d, d.Body, kindFirst, slot))
		lat, late := s.latency.Summary(), s.late.Summary()
		require.Equal(t, 1, lat.Count)
		if openLoop {
			assert.GreaterOrEqual(t, lat.Max, 300*time.Millisecond, "open loop: latency from the slot")
			assert.Equal(t, 1, late.Count, "the late send is reported")
			assert.GreaterOrEqual(t, late.Max, 300*time.Millisecond)
		} else {
			assert.Less(t, lat.Max, 300*time.Millisecond, "closed loop: latency from the send")
			assert.Zero(t, late.Count)
		}
	}
}

// The pacer hands out fixed slots whatever the answers: a sender that takes
// a slot already due leaves at once, and the schedule never stretches.
func TestPacerSlotsAreFixed(t *testing.T) {
	p := newPacer(1000) // one slot a millisecond
	first := p.wait(context.Background(), 1)
	time.Sleep(20 * time.Millisecond) // a slow answer: slots 1..19 are past now
	second := p.wait(context.Background(), 2)
	third := p.wait(context.Background(), 1)
	assert.Equal(t, time.Millisecond, second.Sub(first))
	assert.Equal(t, 2*time.Millisecond, third.Sub(second), "a twin takes two slots")
	assert.True(t, (*pacer)(nil).wait(context.Background(), 1).IsZero(), "unpaced: no schedule")
}

func TestOpenLoopNeedsARateAndEnoughSenders(t *testing.T) {
	t.Setenv("ONCELEDGER_API_TOKENS", "tok")
	t.Setenv("ONCELEDGER_STANDARD_SECRETS", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	t.Setenv("ONCELEDGER_STRIPE_SECRETS", "whsec_x")
	_, err := parseFlags([]string{"--open-loop"}, nil)
	require.ErrorContains(t, err, "--open-loop needs a --rate")
	o, err := parseFlags([]string{"--open-loop", "--rate", "500", "--concurrency", "8"}, nil)
	require.NoError(t, err)
	assert.Equal(t, 500, o.Concurrency)
}
