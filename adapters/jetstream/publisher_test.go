package jetstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/jetstream"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/outbound"
)

// natsURL is the nats-server -js that .ci/run starts.
func natsURL() string {
	if u := os.Getenv("ONCELEDGER_TEST_NATS_URL"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// unique returns a subject prefix and stream name no other test uses, and
// deletes the stream afterwards.
func unique(t *testing.T) (subject, stream string) {
	id := uuid.NewString()[:8]
	subject, stream = "test_"+id+".events", "TEST_"+id
	t.Cleanup(func() {
		nc, err := nats.Connect(natsURL())
		if err != nil {
			return
		}
		defer nc.Close()
		js, _ := natsjs.New(nc)
		_ = js.DeleteStream(context.Background(), stream)
	})
	return subject, stream
}

type memCheckpoint struct {
	mu      sync.Mutex
	at      eventstore.Position
	failing bool // a crash between publish and save
}

func (m *memCheckpoint) Load(context.Context) (eventstore.Position, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at, nil
}

func (m *memCheckpoint) Save(_ context.Context, p eventstore.Position) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failing {
		return errors.New("crashed before the checkpoint")
	}
	m.at = p
	return nil
}

func appendCaptures(t *testing.T, ctx context.Context, s eventstore.Store, from, n int) {
	for i := from; i < from+n; i++ {
		pi := fmt.Sprintf("pi_%d", i)
		e := payment.Captured{Meta: payment.Meta{Provider: "stripe", PaymentKey: pi, DedupKey: "evt_" + pi, OccurredAt: time.Now().UTC()},
			CaptureID: "ch_" + pi, Amount: 1000, Currency: "USD"}
		typ, data, err := payment.Encode(e)
		require.NoError(t, err)
		_, err = s.Append(ctx, delivery.PaymentStream("stripe", pi), eventstore.NoStream,
			[]eventstore.EventData{{ID: payment.EventID("stripe", e.DedupKey, 0), Type: typ, Data: data}})
		require.NoError(t, err)
	}
}

// stored reads back every message of the stream: its Nats-Msg-Id and the
// event's id in the body.
func stored(t *testing.T, ctx context.Context, stream string) map[string]int {
	nc, err := nats.Connect(natsURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	out := map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		var e outbound.Event
		require.NoError(t, json.Unmarshal(m.Data, &e))
		require.Equal(t, e.ID.String(), m.Header.Get(natsjs.MsgIDHeader))
		require.Equal(t, "payment.captured", m.Subject[len(m.Subject)-len("payment.captured"):])
		out[e.ID.String()]++
	}
	return out
}

// Each fact is in the stream once across a crash of the publisher between
// publishing and saving its checkpoint, and a restart with a new
// connection: the re-published batch has the same ids and JetStream drops it.
func TestEachFactOnceAcrossARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	subject, stream := unique(t)
	store := postgres.NewEventStore(pgtest.NewPool(t))
	appendCaptures(t, ctx, store, 0, 30)
	cp := &memCheckpoint{failing: true}

	pub, err := jetstream.Dial(ctx, jetstream.Config{URL: natsURL(), Subject: subject, Stream: stream}, slog.Default())
	require.NoError(t, err)
	relay := &outbound.Relay{Feed: outbound.NewFeed(store), Publisher: pub, Checkpoint: cp, Batch: 20}
	_, err = relay.Step(ctx, eventstore.Start, 0)
	require.Error(t, err, "the crash")
	pub.Close()

	cp.failing = false
	appendCaptures(t, ctx, store, 30, 10)
	pub, err = jetstream.Dial(ctx, jetstream.Config{URL: natsURL(), Subject: subject, Stream: stream}, slog.Default())
	require.NoError(t, err)
	defer pub.Close()
	assert.Equal(t, stream, pub.Stream, "the stream made at first is found again")
	relay.Publisher = pub
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay.Run(rctx) }()
	require.Eventually(t, func() bool { return len(stored(t, ctx, stream)) == 40 }, 20*time.Second, 50*time.Millisecond)
	stop()
	require.NoError(t, <-done)
	for id, n := range stored(t, ctx, stream) {
		assert.Equalf(t, 1, n, "event %s stored %d times", id, n)
	}
	evs, err := outbound.NewFeed(store).Page(ctx, outbound.Query{Limit: 100})
	require.NoError(t, err)
	got := stored(t, ctx, stream)
	for _, e := range evs.Events {
		assert.Contains(t, got, e.ID.String(), "the feed's id is the message's")
	}
}

// A stream that already covers the subjects is used, not duplicated; one
// whose duplicate window is under a minute is a start-up warning.
func TestExistingStreamIsUsedAndAShortWindowWarns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subject, stream := unique(t)
	nc, err := nats.Connect(natsURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, natsjs.StreamConfig{Name: stream, Subjects: []string{subject + ".>"}, Duplicates: 10 * time.Second})
	require.NoError(t, err)

	var logs bytes.Buffer
	pub, err := jetstream.Dial(ctx, jetstream.Config{URL: natsURL(), Subject: subject, Stream: "OTHER_" + stream},
		slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	defer pub.Close()
	assert.Equal(t, stream, pub.Stream)
	assert.Contains(t, logs.String(), "duplicate window is shorter than a minute")
	_, err = js.Stream(ctx, "OTHER_"+stream)
	assert.ErrorIs(t, err, natsjs.ErrStreamNotFound, "no second stream over the same subjects")
}
