package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// The outbound side under faults: what leaves the ledger (JetStream here,
// webhook subscriptions in shiponce_test.go) carries each fact once, with
// the id GET /v1/events gives it, across a kill -9 of serve.

// feedEvent is the part of an outbound event these tests compare.
type feedEvent struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Provider  string `json:"provider"`
	PaymentID string `json:"payment_id"`
}

// readFeed pages GET /v1/events from the beginning to its end, in feed
// order, keeping types (every type when none).
func readFeed(ctx context.Context, t *testing.T, srv *server, types ...string) []feedEvent {
	t.Helper()
	var out []feedEvent
	after := ""
	for {
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after", after)
		}
		if len(types) > 0 {
			q.Set("type", strings.Join(types, ","))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url("/v1/events?"+q.Encode()), nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+srv.sec.apiToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var page struct {
			Events []feedEvent `json:"events"`
			Next   string      `json:"next"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, err)
		if len(page.Events) == 0 {
			return out
		}
		out = append(out, page.Events...)
		after = page.Next
	}
}

// natsURL is the nats-server -js that .ci/run starts.
func natsURL() string {
	if u := os.Getenv("ONCELEDGER_TEST_NATS_URL"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// natsStream is a subject prefix and stream name of this test's own, with
// a connection to JetStream; the stream is deleted at cleanup.
func natsStream(t *testing.T) (subject, stream string, js natsjs.JetStream) {
	t.Helper()
	id := randomHex(t, 4)
	subject, stream = "chaos_"+id+".events", "CHAOS_"+strings.ToUpper(id)
	nc, err := nats.Connect(natsURL())
	require.NoError(t, err, "the JetStream tests need nats-server -js at %s", natsURL())
	js, err = natsjs.New(nc)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = js.DeleteStream(context.Background(), stream)
		nc.Close()
	})
	return subject, stream, js
}

// streamCounts reads back every message of the stream: how often each
// Nats-Msg-Id is stored. It fails on a message whose header and body ids
// differ.
func streamCounts(ctx context.Context, t *testing.T, js natsjs.JetStream, stream string) map[string]int {
	t.Helper()
	out := map[string]int{}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return out // not created yet
	}
	info, err := s.Info(ctx)
	require.NoError(t, err)
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		var e feedEvent
		require.NoError(t, json.Unmarshal(m.Data, &e))
		require.Equal(t, e.ID, m.Header.Get(natsjs.MsgIDHeader), "message %d: header and body ids", seq)
		require.True(t, strings.HasSuffix(m.Subject, "."+e.Type), "message %d on %s is a %s", seq, m.Subject, e.Type)
		out[e.ID]++
	}
	return out
}

// TestJetStreamOnceAcrossKill9: serve publishes to JetStream while it
// ingests a concurrent load and is killed with SIGKILL in the middle, with
// messages published whose checkpoint may not be saved. After the restart
// and the providers' redeliveries, the stream holds every outbound event of
// the feed exactly once, under the feed's id.
func TestJetStreamOnceAcrossKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	subject, stream, js := natsStream(t)
	dbURL := pgtest.UnusedDatabaseURL(t)
	srv := newServer(t, dbURL, newSecrets(t), true)
	srv.env = []string{"ONCELEDGER_OUTBOX_NATS_URL=" + natsURL(),
		"ONCELEDGER_OUTBOX_NATS_SUBJECT=" + subject, "ONCELEDGER_OUTBOX_NATS_STREAM=" + stream}
	srv.start()
	pool := openPool(t, dbURL)
	seed := loggedSeed(t)
	w := newWorkload(t, seed, 150*scale(t))
	s := newSender(t, srv, workers, duringOutage)

	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		s.deliver(ctx, w.seqs, workers, policy{tries: 3, backoff: 20 * time.Millisecond, until: time.Now().Add(5 * time.Minute)})
	}()
	require.True(t, waitAcked(ctx, s, len(w.all)/2, loadDone), "the load ended before the kill")
	published := len(streamCounts(ctx, t, js, stream))
	srv.kill9()
	t.Logf("kill -9 at %d/%d acknowledged, %d events published", s.ackedCount(), len(w.all), published)
	time.Sleep(200 * time.Millisecond)
	srv.start()
	<-loadDone
	redeliverAndCheck(ctx, t, pool, srv, s, w, rand.New(rand.NewPCG(seed, 1)))

	feed := readFeed(ctx, t, srv)
	require.NotEmpty(t, feed)
	var counts map[string]int
	require.NoError(t, eventually(ctx, 60*time.Second, 100*time.Millisecond, func() error {
		counts = streamCounts(ctx, t, js, stream)
		if len(counts) < len(feed) {
			return fmt.Errorf("%d of %d events in the stream", len(counts), len(feed))
		}
		return nil
	}))
	for _, e := range feed {
		assert.Equalf(t, 1, counts[e.ID], "event %s (%s) stored %d times", e.ID, e.Type, counts[e.ID])
		delete(counts, e.ID)
	}
	assert.Empty(t, counts, "messages whose id the feed does not have")
	t.Logf("%d events in the feed, each once in the stream across the kill", len(feed))
}
