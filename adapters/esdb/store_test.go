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
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = esdbclient.NoopLogging()
	c, err := esdbclient.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func rawAppend(t *testing.T, c *esdbclient.Client, stream, typ string) {
	t.Helper()
	_, err := c.AppendToStream(ctx(t), stream, esdbclient.AppendToStreamOptions{}, esdbclient.EventData{
		EventID: uuid.New(), EventType: typ, ContentType: esdbclient.ContentTypeJson, Data: []byte(`{}`),
	})
	if err != nil {
		t.Fatalf("raw append to %s: %v", stream, err)
	}
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
	if err != nil || head != eventstore.Start {
		t.Fatalf("head of an empty feed = %v, %v; want Start", head, err)
	}
	rawAppend(t, raw, "$stats-127.0.0.1:2113", "$statsCollected")
	if head, err := s.Head(c); err != nil || head != eventstore.Start {
		t.Fatalf("head with only system events = %v, %v; want Start", head, err)
	}

	var want []uuid.UUID
	for i := 0; i < 5; i++ {
		pay := events(2)
		if _, err := s.Append(c, fmt.Sprintf("payment-stripe-pi_%d", i), eventstore.NoStream, pay); err != nil {
			t.Fatal(err)
		}
		want = append(want, pay[0].ID, pay[1].ID)
		rawAppend(t, raw, "orders-1", "OrderPlaced")
		rawAppend(t, raw, "$$payment-stripe-pi_0", "$metadata")
		po := events(1)
		if _, err := s.Append(c, fmt.Sprintf("payout-adyen-po_%d", i), eventstore.NoStream, po); err != nil {
			t.Fatal(err)
		}
		want = append(want, po[0].ID)
	}
	rawAppend(t, raw, "$stats-127.0.0.1:2113", "$statsCollected") // trailing noise for Head

	for _, limit := range []int{1, 2, 7, 100} {
		var got []eventstore.RecordedEvent
		pos := eventstore.Start
		for {
			page, err := s.ReadAll(c, pos, limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page))
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			pos = page[len(page)-1].Position
		}
		if len(got) != len(want) {
			t.Fatalf("limit %d: %d feed events, want %d", limit, len(got), len(want))
		}
		for i, e := range got {
			if e.ID != want[i] {
				t.Fatalf("limit %d: event %d = %s (%s), want %s", limit, i, e.ID, e.StreamID, want[i])
			}
		}
		if head, err := s.Head(c); err != nil || head != got[len(got)-1].Position {
			t.Fatalf("head = %v, %v; want last feed event %v", head, err, got[len(got)-1].Position)
		}
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
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		if res.NextExpected != 2 {
			t.Fatalf("attempt %d: NextExpected %d", i, res.NextExpected)
		}
	}
	if n := srv.EventCount(); n != 3 {
		t.Fatalf("log holds %d events, want 3", n)
	}
	if n := srv.AppendRequests(); n != 3 {
		t.Fatalf("%d append requests reached the server, want 3", n)
	}
	// A partial overlap is a conflict, not idempotence.
	_, err := s.Append(c, "payment-x-1", eventstore.NoStream, append(evs[:2:2], events(1)...))
	var wv *eventstore.WrongVersionError
	if !errors.As(err, &wv) || wv.Actual != 2 || wv.Stream != "payment-x-1" {
		t.Fatalf("partial overlap: %v", err)
	}
}

// TestUnavailable: a stopped node and a deadline are ErrUnavailable (the
// webhook answers 503); a node that comes back is used again, although the
// client closed itself after its failed discovery.
func TestUnavailable(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL()+"&maxDiscoverAttempts=2&discoveryInterval=10")
	c := ctx(t)
	if _, err := s.Append(c, "payment-x-1", eventstore.NoStream, events(1)); err != nil {
		t.Fatal(err)
	}

	// Deadline.
	srv.SetAppendDelay(2 * time.Second)
	short, cancel := context.WithTimeout(c, 100*time.Millisecond)
	_, err := s.Append(short, "payment-x-1", eventstore.Exact(0), events(1))
	cancel()
	if !errors.Is(err, eventstore.ErrUnavailable) || errors.Is(err, eventstore.ErrWrongVersion) {
		t.Fatalf("append past its deadline: %v; want ErrUnavailable", err)
	}
	srv.SetAppendDelay(0)

	// Node down: every operation reports ErrUnavailable, repeatedly.
	addr := srv.Addr()
	srv.Stop()
	for i := 0; i < 3; i++ {
		if _, err := s.Append(c, "payment-x-1", eventstore.Any, events(1)); !errors.Is(err, eventstore.ErrUnavailable) {
			t.Fatalf("append %d while down: %v", i, err)
		}
		if _, err := s.ReadStream(c, "payment-x-1"); !errors.Is(err, eventstore.ErrUnavailable) {
			t.Fatalf("read %d while down: %v", i, err)
		}
		if _, err := s.ReadAll(c, eventstore.Start, 10); !errors.Is(err, eventstore.ErrUnavailable) {
			t.Fatalf("read all %d while down: %v", i, err)
		}
		if _, err := s.Head(c); !errors.Is(err, eventstore.ErrUnavailable) {
			t.Fatalf("head %d while down: %v", i, err)
		}
	}

	// Back on the same address, with its log.
	if err := srv.Start(addr); err != nil {
		t.Fatal(err)
	}
	var got []eventstore.RecordedEvent
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = s.ReadStream(c, "payment-x-1")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || len(got) != 1 {
		t.Fatalf("after restart: %d events, %v", len(got), err)
	}
	if _, err := s.Append(c, "payment-x-1", eventstore.Exact(0), events(1)); err != nil {
		t.Fatalf("append after restart: %v", err)
	}
}

// TestDialDownNodeRecovers: a store dialled while the node is down fails with
// ErrUnavailable and works once the node is up.
func TestDialDownNodeRecovers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	s := dial(t, "esdb://"+addr+"?tls=false&maxDiscoverAttempts=2&discoveryInterval=10")
	c := ctx(t)
	if _, err := s.ReadStream(c, "payment-x-1"); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("read with no node: %v", err)
	}
	if _, err := s.Changes(c); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Fatalf("changes with no node: %v", err)
	}
	srv := esdbfake.New()
	if err := srv.Start(addr); err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	t.Cleanup(srv.Stop)
	if _, err := s.Append(c, "payment-x-1", eventstore.NoStream, events(1)); err != nil {
		t.Fatalf("append once the node is up: %v", err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	wake := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no wake-up after %s", what)
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case <-ch:
			t.Fatalf("wake-up after %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}

	rawAppend(t, raw, "orders-1", "OrderPlaced")
	rawAppend(t, raw, "$stats-1", "$statsCollected")
	quiet("events outside the feed")

	if _, err := s.Append(c, "payout-x-1", eventstore.NoStream, events(1)); err != nil {
		t.Fatal(err)
	}
	wake("a payout append")

	addr := srv.Addr()
	srv.Stop()
	if err := srv.Start(addr); err != nil {
		t.Fatal(err)
	}
	// The resubscription itself signals (events may have been missed);
	// drain it, then a new append must wake us again.
	wake("resubscription")
	time.Sleep(100 * time.Millisecond)
	select {
	case <-ch:
	default:
	}
	if _, err := s.Append(c, "payment-x-1", eventstore.NoStream, events(1)); err != nil {
		t.Fatal(err)
	}
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
		if err != nil {
			t.Error(err)
		}
	}
	got, err := s.ReadStream(c, "payment-x-1")
	if err != nil || len(got) != 2 || got[0].ID != evs[0].ID || got[1].ID != evs[1].ID {
		t.Fatalf("stream = %v, %v", got, err)
	}
}

func TestDialRejectsBadConnectionString(t *testing.T) {
	for _, bad := range []string{"postgres://x", "esdb://", "esdb://host:2113/path"} {
		if _, err := esdb.Dial(bad); err == nil {
			t.Errorf("Dial(%q) succeeded", bad)
		}
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
		if _, err := s.Append(c, "payment-long-1", eventstore.ExpectFor(len(all)), batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	got, err := s.ReadStream(c, "payment-long-1")
	if err != nil || len(got) != n {
		t.Fatalf("%d events, %v", len(got), err)
	}
	for i, e := range got {
		if e.ID != all[i].ID || e.Version != uint64(i) {
			t.Fatalf("event %d = %s v%d", i, e.ID, e.Version)
		}
	}
	feed, err := s.ReadAll(c, eventstore.Start, 5000)
	if err != nil || len(feed) != n {
		t.Fatalf("feed: %d events, %v", len(feed), err)
	}
}

// TestEmptyAppendChecksExpectation: an append of no events writes nothing
// but still checks the expectation, and reports the stream's last version.
func TestEmptyAppendChecksExpectation(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL())
	c := ctx(t)
	if res, err := s.Append(c, "payment-e-1", eventstore.NoStream, nil); err != nil || res.NextExpected != 0 {
		t.Fatalf("empty append to a missing stream: %+v, %v", res, err)
	}
	if _, err := s.Append(c, "payment-e-1", eventstore.StreamExists, nil); !errors.Is(err, eventstore.ErrWrongVersion) {
		t.Fatalf("empty StreamExists append to a missing stream: %v", err)
	}
	if _, err := s.Append(c, "payment-e-1", eventstore.NoStream, events(3)); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Append(c, "payment-e-1", eventstore.Exact(2), nil); err != nil || res.NextExpected != 2 {
		t.Fatalf("empty Exact(2) append: %+v, %v", res, err)
	}
	if _, err := s.Append(c, "payment-e-1", eventstore.Exact(1), nil); !errors.Is(err, eventstore.ErrWrongVersion) {
		t.Fatalf("empty stale append: %v", err)
	}
	if n := srv.EventCount(); n != 3 {
		t.Fatalf("log holds %d events, want 3", n)
	}
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
		if _, err := s.Append(c, "payment-bad-1", eventstore.Any, evs); err == nil {
			t.Errorf("%s: append succeeded", name)
		}
	}
	if _, err := s.Append(c, "", eventstore.Any, events(1)); err == nil {
		t.Error("empty stream name: append succeeded")
	}
	if n := srv.AppendRequests(); n != 0 {
		t.Fatalf("%d bad appends reached the server", n)
	}
}
