package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	deliveries "github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/outbound"
)

// events tail prints each event once as a JSON line, follows new commits,
// keeps to its types, and on interrupt prints the cursor that resumes after
// the last line.
func TestEventsTailFollowsAndResumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := postgres.NewEventStore(pgtest.NewPool(t))
	appendCapture := func(pi string) {
		e := payment.Captured{Meta: payment.Meta{Provider: "stripe", PaymentKey: pi, DedupKey: "evt_" + pi, OccurredAt: time.Now().UTC()},
			CaptureID: "ch_" + pi, Amount: 1000, Currency: "USD"}
		typ, data, err := payment.Encode(e)
		require.NoError(t, err)
		fail := payment.Failed{Meta: payment.Meta{Provider: "stripe", PaymentKey: pi, DedupKey: "evt_f_" + pi, OccurredAt: time.Now().UTC()}}
		ftyp, fdata, err := payment.Encode(fail)
		require.NoError(t, err)
		_, err = store.Append(ctx, deliveries.PaymentStream("stripe", pi), eventstore.NoStream, []eventstore.EventData{
			{ID: payment.EventID("stripe", e.DedupKey, 0), Type: typ, Data: data},
			{ID: payment.EventID("stripe", fail.DedupKey, 0), Type: ftyp, Data: fdata}})
		require.NoError(t, err)
	}
	appendCapture("pi_1")

	run := func(after eventstore.Position, want int, then func()) ([]outbound.Event, string) {
		var out, errw syncBuffer
		tctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- tailEvents(tctx, outbound.NewFeed(store), outbound.Query{After: after, Types: []string{outbound.PaymentCaptured}}, &out, &errw)
		}()
		if then != nil {
			time.Sleep(200 * time.Millisecond)
			then()
		}
		require.Eventually(t, func() bool { return strings.Count(out.String(), "\n") >= want }, 10*time.Second, 10*time.Millisecond)
		stop()
		require.NoError(t, <-done)
		var evs []outbound.Event
		for line := range strings.Lines(out.String()) {
			var e outbound.Event
			require.NoError(t, json.Unmarshal([]byte(line), &e))
			evs = append(evs, e)
		}
		return evs, strings.TrimSpace(strings.TrimPrefix(errw.String(), "cursor "))
	}
	evs, cursor := run(eventstore.Start, 2, func() { appendCapture("pi_2") })
	require.Len(t, evs, 2)
	assert.Equal(t, "pi_1", evs[0].PaymentID)
	assert.Equal(t, "pi_2", evs[1].PaymentID, "followed a new commit")
	after, err := outbound.ParseCursor(cursor)
	require.NoError(t, err)
	more, _ := run(after, 1, func() { appendCapture("pi_3") })
	require.Len(t, more, 1)
	assert.Equal(t, "pi_3", more[0].PaymentID, "resumed after the cursor, nothing twice")
}
