package esdb_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	esdbclient "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/eventstore/eventstoretest"
)

// The contract suite names its streams "contract<kind>-<hex>".
const contractPrefix = "contract"

func dial(t *testing.T, url string, opts ...esdb.Option) *esdb.Store {
	t.Helper()
	s, err := esdb.Dial(url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestContractFake runs the shared contract suite against the adapter and
// the in-process fake server. Always on.
func TestContractFake(t *testing.T) {
	eventstoretest.Run(t, func(t *testing.T) eventstoretest.Harness {
		srv := esdbfake.Start(t)
		return eventstoretest.Harness{Store: dial(t, srv.URL(), esdb.WithStreamPrefixes(contractPrefix))}
	})
}

// TestContractRealServer runs the suite against a real EventStoreDB /
// KurrentDB node, e.g. ONCELEDGER_TEST_ESDB_URL=esdb://127.0.0.1:2113?tls=false
// (docker compose up kurrentdb).
func TestContractRealServer(t *testing.T) {
	url := os.Getenv("ONCELEDGER_TEST_ESDB_URL")
	if url == "" {
		t.Skip("ONCELEDGER_TEST_ESDB_URL not set")
	}
	eventstoretest.Run(t, func(t *testing.T) eventstoretest.Harness {
		return eventstoretest.Harness{Store: dial(t, url, esdb.WithStreamPrefixes(contractPrefix))}
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func events(n int) []eventstore.EventData {
	out := make([]eventstore.EventData, n)
	for i := range out {
		out[i] = eventstore.EventData{ID: uuid.New(), Type: "Tested", Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}
	}
	return out
}

// rawClient is a plain client on the fake, to write what the adapter never
// writes (system streams, other applications' streams).
func rawClient(t *testing.T, url string) *esdbclient.Client {
	t.Helper()
	cfg, err := esdbclient.ParseConnectionString(url)
	require.NoError(t, err)
	cfg.Logger = esdbclient.NoopLogging()
	c, err := esdbclient.NewClient(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func rawAppend(t *testing.T, c *esdbclient.Client, stream, typ string) {
	t.Helper()
	_, err := c.AppendToStream(ctx(t), stream, esdbclient.AppendToStreamOptions{}, esdbclient.EventData{
		EventID: uuid.New(), EventType: typ, ContentType: esdbclient.ContentTypeJson, Data: []byte(`{}`),
	})
	require.NoError(t, err, "raw append to %s: %v", stream, err)
}

// TestFeedFiltersToPaymentStreams: with the default prefixes, ReadAll and
// Head see only payment-/payout- streams, never system streams, system event
// types or other streams, however they interleave.
func TestFeedFiltersToPaymentStreams(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL())
	raw := rawClient(t, srv.URL())
	c := ctx(t)

	head, err := s.Head(c)
	require.NoError(t, err, "head of an empty feed = %v, %v; want Start", head, err)
	require.EqualValues(t, eventstore.Start, head, "head of an empty feed = %v, %v; want Start", head, err)
	rawAppend(t, raw, "$stats-127.0.0.1:2113", "$statsCollected")
	head, err = s.Head(c)
	require.NoError(t, err, "head with only system events = %v, %v; want Start", head, err)
	require.EqualValues(t, eventstore.Start, head, "head with only system events = %v, %v; want Start", head, err)

	var want []uuid.UUID
	for i := 0; i < 5; i++ {
		pay := events(2)
		_, err := s.Append(c, fmt.Sprintf("payment-stripe-pi_%d", i), eventstore.NoStream, pay)
		require.NoError(t, err)
		want = append(want, pay[0].ID, pay[1].ID)
		rawAppend(t, raw, "orders-1", "OrderPlaced")
		rawAppend(t, raw, "$$payment-stripe-pi_0", "$metadata")
		po := events(1)
		_, err = s.Append(c, fmt.Sprintf("payout-adyen-po_%d", i), eventstore.NoStream, po)
		require.NoError(t, err)
		want = append(want, po[0].ID)
	}
	rawAppend(t, raw, "$stats-127.0.0.1:2113", "$statsCollected") // trailing noise for Head

	for _, limit := range []int{1, 2, 7, 100} {
		var got []eventstore.RecordedEvent
		pos := eventstore.Start
		for {
			page, err := s.ReadAll(c, pos, limit)
			require.NoError(t, err)
			require.False(t, len(page) > limit, "limit %d: page of %d", limit, len(page))
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			pos = page[len(page)-1].Position
		}
		require.EqualValues(t, len(want), len(got), "limit %d: %d feed events, want %d", limit, len(got), len(want))
		for i, e := range got {
			require.EqualValues(t, want[i], e.ID, "limit %d: event %d = %s (%s), want %s", limit, i, e.ID, e.StreamID, want[i])
		}
		head, err := s.Head(c)
		require.NoError(t, err, "head = %v, %v; want last feed event %v", head, err, got[len(got)-1].Position)
		require.EqualValues(t, got[len(got)-1].Position, head, "head = %v, %v; want last feed event %v", head, err, got[len(got)-1].Position)
	}
}

// TestIdempotentRetryWritesNothing: the server, not the adapter, makes the
// retry a no-op; the fake's log proves nothing was written twice.
func TestIdempotentRetryWritesNothing(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL())
	c := ctx(t)
	evs := events(3)
	for i := 0; i < 3; i++ {
		res, err := s.Append(c, "payment-x-1", eventstore.NoStream, evs)
		require.NoError(t, err, "attempt %d: %v", i, err)
		require.EqualValues(t, 2, res.NextExpected, "attempt %d: NextExpected %d", i, res.NextExpected)
	}
	n := srv.EventCount()
	require.EqualValues(t, 3, n, "log holds %d events, want 3", n)
	n = srv.AppendRequests()
	require.EqualValues(t, 3, n, "%d append requests reached the server, want 3", n)
	// A partial overlap is a conflict, not idempotence.
	_, err := s.Append(c, "payment-x-1", eventstore.NoStream, append(evs[:2:2], events(1)...))
	var wv *eventstore.WrongVersionError
	require.True(t, errors.As(err, &wv), "partial overlap: %v", err)
	require.EqualValues(t, 2, wv.Actual, "partial overlap: %v", err)
	require.EqualValues(t, "payment-x-1", wv.Stream, "partial overlap: %v", err)
}

// TestUnavailable: a stopped node and a deadline are ErrUnavailable (the
// webhook answers 503); a node that comes back is used again, although the
// client closed itself after its failed discovery.
func TestUnavailable(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL()+"&maxDiscoverAttempts=2&discoveryInterval=10")
	c := ctx(t)
	_, err := s.Append(c, "payment-x-1", eventstore.NoStream, events(1))
	require.NoError(t, err)

	// Deadline.
	srv.SetAppendDelay(2 * time.Second)
	short, cancel := context.WithTimeout(c, 100*time.Millisecond)
	_, err = s.Append(short, "payment-x-1", eventstore.Exact(0), events(1))
	cancel()
	require.ErrorIs(t, err, eventstore.ErrUnavailable, "append past its deadline: %v; want ErrUnavailable", err)
	require.False(t, errors.Is(err, eventstore.ErrWrongVersion), "append past its deadline: %v; want ErrUnavailable", err)
	srv.SetAppendDelay(0)

	// Node down: every operation reports ErrUnavailable, repeatedly.
	addr := srv.Addr()
	srv.Stop()
	for i := 0; i < 3; i++ {
		_, err := s.Append(c, "payment-x-1", eventstore.Any, events(1))
		require.ErrorIs(t, err, eventstore.ErrUnavailable, "append %d while down: %v", i, err)
		_, err = s.ReadStream(c, "payment-x-1")
		require.ErrorIs(t, err, eventstore.ErrUnavailable, "read %d while down: %v", i, err)
		_, err = s.ReadAll(c, eventstore.Start, 10)
		require.ErrorIs(t, err, eventstore.ErrUnavailable, "read all %d while down: %v", i, err)
		_, err = s.Head(c)
		require.ErrorIs(t, err, eventstore.ErrUnavailable, "head %d while down: %v", i, err)
	}

	// Back on the same address, with its log.
	require.NoError(t, srv.Start(addr))
	var got []eventstore.RecordedEvent
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = s.ReadStream(c, "payment-x-1")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err, "after restart: %d events, %v", len(got), err)
	require.Len(t, got, 1, "after restart: %d events, %v", len(got), err)
	_, err = s.Append(c, "payment-x-1", eventstore.Exact(0), events(1))
	require.NoError(t, err, "append after restart: %v", err)
}

// TestDialDownNodeRecovers: a store dialled while the node is down fails with
// ErrUnavailable and works once the node is up.
func TestDialDownNodeRecovers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	_ = l.Close()

	s := dial(t, "esdb://"+addr+"?tls=false&maxDiscoverAttempts=2&discoveryInterval=10")
	c := ctx(t)
	_, err = s.ReadStream(c, "payment-x-1")
	require.ErrorIs(t, err, eventstore.ErrUnavailable, "read with no node: %v", err)
	_, err = s.Changes(c)
	require.ErrorIs(t, err, eventstore.ErrUnavailable, "changes with no node: %v", err)
	srv := esdbfake.New()
	if err := srv.Start(addr); err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	t.Cleanup(srv.Stop)
	_, err = s.Append(c, "payment-x-1", eventstore.NoStream, events(1))
	require.NoError(t, err, "append once the node is up: %v", err)
}

// TestChangesSurvivesRestart: the subscription is resumed after the node
// goes away and comes back, and only feed events wake it up.
func TestChangesSurvivesRestart(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL())
	raw := rawClient(t, srv.URL())
	c := ctx(t)
	lctx, stop := context.WithCancel(c)
	defer stop()
	ch, err := s.Changes(lctx)
	require.NoError(t, err)
	wake := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			require.FailNowf(t, "no wake-up after %s", what)
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case <-ch:
			require.FailNowf(t, "wake-up after %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}

	rawAppend(t, raw, "orders-1", "OrderPlaced")
	rawAppend(t, raw, "$stats-1", "$statsCollected")
	quiet("events outside the feed")

	_, err = s.Append(c, "payout-x-1", eventstore.NoStream, events(1))
	require.NoError(t, err)
	wake("a payout append")

	addr := srv.Addr()
	srv.Stop()
	require.NoError(t, srv.Start(addr))
	// The resubscription itself signals (events may have been missed);
	// drain it, then a new append must wake us again.
	wake("resubscription")
	time.Sleep(100 * time.Millisecond)
	select {
	case <-ch:
	default:
	}
	_, err = s.Append(c, "payment-x-1", eventstore.NoStream, events(1))
	require.NoError(t, err)
	wake("an append after the restart")
}

// TestConcurrentIdempotentRetries: many goroutines retrying the same
// decision (same ids, same expectation) all succeed and write it once.
func TestConcurrentIdempotentRetries(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL())
	c := ctx(t)
	evs := events(2)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Append(c, "payment-x-1", eventstore.NoStream, evs)
			if err == nil && res.NextExpected != 1 {
				err = fmt.Errorf("NextExpected %d", res.NextExpected)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	got, err := s.ReadStream(c, "payment-x-1")
	require.NoError(t, err, "stream = %v, %v", got, err)
	require.Len(t, got, 2, "stream = %v, %v", got, err)
	require.EqualValues(t, evs[0].ID, got[0].ID, "stream = %v, %v", got, err)
	require.EqualValues(t, evs[1].ID, got[1].ID, "stream = %v, %v", got, err)
}

func TestDialRejectsBadConnectionString(t *testing.T) {
	for _, bad := range []string{"postgres://x", "esdb://", "esdb://host:2113/path"} {
		_, err := esdb.Dial(bad)
		assert.Error(t, err, "Dial(%q) succeeded", bad)
	}
}

func TestLongStreamReadsAllPages(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL())
	c := ctx(t)
	const n = 1100 // more than two read pages
	var all []eventstore.EventData
	for len(all) < n {
		batch := events(100)
		_, err := s.Append(c, "payment-long-1", eventstore.ExpectFor(len(all)), batch)
		require.NoError(t, err)
		all = append(all, batch...)
	}
	got, err := s.ReadStream(c, "payment-long-1")
	require.NoError(t, err, "%d events, %v", len(got), err)
	require.Len(t, got, n, "%d events, %v", len(got), err)
	for i, e := range got {
		require.EqualValues(t, all[i].ID, e.ID, "event %d = %s v%d", i, e.ID, e.Version)
		require.EqualValues(t, uint64(i), e.Version, "event %d = %s v%d", i, e.ID, e.Version)
	}
	feed, err := s.ReadAll(c, eventstore.Start, 5000)
	require.NoError(t, err, "feed: %d events, %v", len(feed), err)
	require.Len(t, feed, n, "feed: %d events, %v", len(feed), err)
}

// TestEmptyAppendChecksExpectation: an append of no events writes nothing
// but still checks the expectation, and reports the stream's last version.
func TestEmptyAppendChecksExpectation(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL())
	c := ctx(t)
	res, err := s.Append(c, "payment-e-1", eventstore.NoStream, nil)
	require.NoError(t, err, "empty append to a missing stream: %+v, %v", res, err)
	require.EqualValues(t, 0, res.NextExpected, "empty append to a missing stream: %+v, %v", res, err)
	_, err = s.Append(c, "payment-e-1", eventstore.StreamExists, nil)
	require.ErrorIs(t, err, eventstore.ErrWrongVersion, "empty StreamExists append to a missing stream: %v", err)
	_, err = s.Append(c, "payment-e-1", eventstore.NoStream, events(3))
	require.NoError(t, err)
	res, err = s.Append(c, "payment-e-1", eventstore.Exact(2), nil)
	require.NoError(t, err, "empty Exact(2) append: %+v, %v", res, err)
	require.EqualValues(t, 2, res.NextExpected, "empty Exact(2) append: %+v, %v", res, err)
	_, err = s.Append(c, "payment-e-1", eventstore.Exact(1), nil)
	require.ErrorIs(t, err, eventstore.ErrWrongVersion, "empty stale append: %v", err)
	n := srv.EventCount()
	require.EqualValues(t, 3, n, "log holds %d events, want 3", n)
}

func TestAppendRejectsBadEvents(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL())
	c := ctx(t)
	dup := events(2)
	dup[1].ID = dup[0].ID
	noType := events(1)
	noType[0].Type = ""
	nilID := events(1)
	nilID[0].ID = uuid.Nil
	for name, evs := range map[string][]eventstore.EventData{"duplicate id": dup, "no type": noType, "nil id": nilID} {
		_, err := s.Append(c, "payment-bad-1", eventstore.Any, evs)
		assert.Error(t, err, "%s: append succeeded", name)
	}
	_, err := s.Append(c, "", eventstore.Any, events(1))
	assert.Error(t, err, "empty stream name: append succeeded")
	n := srv.AppendRequests()
	require.EqualValues(t, 0, n, "%d bad appends reached the server", n)
}
