package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
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

// serve publishes to JetStream and answers GET /v1/events: a fact committed
// after the server started reaches a waiting long poll and the stream, with
// one id.
func TestEventsServedAndPublished(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bin := buildBinary(t)
	dbURL := pgtest.NewDatabase(t)
	prefix := "test_" + strings.ReplaceAll(t.Name(), "/", "_") + "_" + time.Now().Format("150405.000000")
	prefix = strings.ReplaceAll(prefix, ".", "_")
	addr := freeLoopbackAddr(t)
	srv := startServeWithEnv(t, bin, addr, serveEnv("ONCELEDGER_DATABASE_URL="+dbURL, "ONCELEDGER_ADDR="+addr,
		"ONCELEDGER_API_TOKENS=tok", "ONCELEDGER_OUTBOX_NATS_URL=nats://127.0.0.1:4222",
		"ONCELEDGER_OUTBOX_NATS_SUBJECT="+prefix, "ONCELEDGER_OUTBOX_NATS_STREAM="+strings.ToUpper(prefix)))
	srv.waitHealthy(t)
	nc, err := nats.Connect("nats://127.0.0.1:4222")
	require.NoError(t, err)
	defer nc.Close()
	sub, err := nc.SubscribeSync(prefix + ".>")
	require.NoError(t, err)
	t.Cleanup(func() {
		if js, err := natsjs.New(nc); err == nil {
			_ = js.DeleteStream(context.Background(), strings.ToUpper(prefix))
		}
	})

	type answer struct {
		body map[string]any
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.base+"/v1/events?wait=30s&type=payment.captured", nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var body map[string]any
		got <- answer{body, json.NewDecoder(resp.Body).Decode(&body)}
	}()
	time.Sleep(500 * time.Millisecond)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	e := payment.Captured{Meta: payment.Meta{Provider: "stripe", PaymentKey: "pi_s", DedupKey: "evt_s", OccurredAt: time.Now().UTC()},
		CaptureID: "ch_s", Amount: 1000, Currency: "USD"}
	typ, data, err := payment.Encode(e)
	require.NoError(t, err)
	stored := payment.EventID("stripe", "evt_s", 0)
	_, err = postgres.NewEventStore(pool).Append(ctx, deliveries.PaymentStream("stripe", "pi_s"), eventstore.NoStream,
		[]eventstore.EventData{{ID: stored, Type: typ, Data: data}})
	require.NoError(t, err)

	a := <-got
	require.NoError(t, a.err)
	evs := a.body["events"].([]any)
	require.Len(t, evs, 1, "%v", a.body)
	id := evs[0].(map[string]any)["id"]
	assert.Equal(t, outbound.PublicID(stored).String(), id)
	msg, err := sub.NextMsg(20 * time.Second)
	require.NoError(t, err, "published to JetStream\n%s", srv.log.String())
	assert.Equal(t, prefix+".payment.captured", msg.Subject)
	assert.Equal(t, id, msg.Header.Get("Nats-Msg-Id"))
}
