package esdbfake_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	esdbclient "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
)

func client(t *testing.T, srv *esdbfake.Server) *esdbclient.Client {
	t.Helper()
	cfg, err := esdbclient.ParseConnectionString(srv.URL())
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

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return c
}

func ev(typ string) esdbclient.EventData {
	return esdbclient.EventData{EventID: uuid.New(), EventType: typ, ContentType: esdbclient.ContentTypeJson, Data: []byte(`{"a":1}`)}
}

func appendTo(t *testing.T, c *esdbclient.Client, stream string, exp esdbclient.ExpectedRevision, evs ...esdbclient.EventData) *esdbclient.WriteResult {
	t.Helper()
	res, err := c.AppendToStream(ctx(t), stream, esdbclient.AppendToStreamOptions{ExpectedRevision: exp}, evs...)
	if err != nil {
		t.Fatalf("append to %s: %v", stream, err)
	}
	return res
}

func drain(rs *esdbclient.ReadStream, err error) ([]*esdbclient.RecordedEvent, error) {
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []*esdbclient.RecordedEvent
	for {
		e, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e.OriginalEvent())
	}
}

func TestServerFeaturesAndVersion(t *testing.T) {
	c := client(t, esdbfake.Start(t))
	v, err := c.GetServerVersion()
	if err != nil || v.Major != 24 || v.Minor != 10 {
		t.Fatalf("server version %+v, %v", v, err)
	}
}

func TestWrongExpectedVersionAndIdempotence(t *testing.T) {
	c := client(t, esdbfake.Start(t))
	a, b := ev("A"), ev("B")
	res := appendTo(t, c, "s-1", esdbclient.NoStream{}, a, b)
	if res.NextExpectedVersion != 1 || res.CommitPosition == 0 {
		t.Fatalf("write result %+v", res)
	}
	// Same ids after the same expectation: success, nothing written.
	again := appendTo(t, c, "s-1", esdbclient.NoStream{}, a, b)
	if again.NextExpectedVersion != 1 || again.CommitPosition != res.CommitPosition || again.PreparePosition != res.PreparePosition {
		t.Fatalf("idempotent write result %+v, first %+v", again, res)
	}
	// Any with the same ids: best-effort idempotence.
	appendTo(t, c, "s-1", esdbclient.Any{}, a, b)

	cases := []struct {
		name string
		exp  esdbclient.ExpectedRevision
		evs  []esdbclient.EventData
	}{
		{"no stream, new ids", esdbclient.NoStream{}, []esdbclient.EventData{ev("C")}},
		{"no stream, partial ids", esdbclient.NoStream{}, []esdbclient.EventData{a, ev("C")}},
		{"stale revision", esdbclient.Revision(0), []esdbclient.EventData{ev("C")}},
		{"future revision", esdbclient.Revision(5), []esdbclient.EventData{ev("C")}},
		{"ids past the end", esdbclient.Revision(0), []esdbclient.EventData{b, ev("C")}},
	}
	for _, tc := range cases {
		_, err := c.AppendToStream(ctx(t), "s-1", esdbclient.AppendToStreamOptions{ExpectedRevision: tc.exp}, tc.evs...)
		var e *esdbclient.Error
		if !errors.As(err, &e) || e.Code() != esdbclient.ErrorCodeWrongExpectedVersion {
			t.Errorf("%s: %v, want wrong expected version", tc.name, err)
		}
	}
	_, err := c.AppendToStream(ctx(t), "s-2", esdbclient.AppendToStreamOptions{ExpectedRevision: esdbclient.StreamExists{}}, ev("X"))
	var e *esdbclient.Error
	if !errors.As(err, &e) || e.Code() != esdbclient.ErrorCodeWrongExpectedVersion {
		t.Errorf("stream exists on a missing stream: %v", err)
	}
	got, err := drain(c.ReadStream(ctx(t), "s-1", esdbclient.ReadStreamOptions{}, 100))
	if err != nil || len(got) != 2 || got[0].EventID != a.EventID || got[1].EventID != b.EventID {
		t.Fatalf("stream after conflicts: %d events, %v", len(got), err)
	}
}

func TestReadStream(t *testing.T) {
	c := client(t, esdbfake.Start(t))
	evs := []esdbclient.EventData{ev("A"), ev("B"), ev("C"), ev("D")}
	evs[1].Metadata = []byte(`{"m":1}`)
	appendTo(t, c, "s-1", esdbclient.NoStream{}, evs...)

	got, err := drain(c.ReadStream(ctx(t), "s-1", esdbclient.ReadStreamOptions{From: esdbclient.Revision(1)}, 2))
	if err != nil || len(got) != 2 || got[0].EventNumber != 1 || got[1].EventNumber != 2 {
		t.Fatalf("forwards from 1, 2 events: %v %v", got, err)
	}
	if got[0].EventType != "B" || got[0].ContentType != "application/json" || string(got[0].UserMetadata) != `{"m":1}` ||
		got[0].CreatedDate.Before(time.Now().Add(-time.Minute)) || got[0].CreatedDate.After(time.Now().Add(time.Minute)) {
		t.Fatalf("recorded event %+v", got[0])
	}
	got, err = drain(c.ReadStream(ctx(t), "s-1", esdbclient.ReadStreamOptions{Direction: esdbclient.Backwards, From: esdbclient.End{}}, 3))
	if err != nil || len(got) != 3 || got[0].EventNumber != 3 || got[2].EventNumber != 1 {
		t.Fatalf("backwards from end: %v %v", got, err)
	}
	got, err = drain(c.ReadStream(ctx(t), "s-1", esdbclient.ReadStreamOptions{Direction: esdbclient.Backwards, From: esdbclient.Revision(1)}, 10))
	if err != nil || len(got) != 2 || got[0].EventNumber != 1 || got[1].EventNumber != 0 {
		t.Fatalf("backwards from 1: %v %v", got, err)
	}
	_, err = drain(c.ReadStream(ctx(t), "nope", esdbclient.ReadStreamOptions{}, 10))
	var e *esdbclient.Error
	if !errors.As(err, &e) || e.Code() != esdbclient.ErrorCodeResourceNotFound {
		t.Fatalf("missing stream: %v", err)
	}
}

func TestReadAllPositions(t *testing.T) {
	c := client(t, esdbfake.Start(t))
	appendTo(t, c, "s-1", esdbclient.Any{}, ev("A"), ev("B"))
	appendTo(t, c, "t-1", esdbclient.Any{}, ev("C"))
	all, err := drain(c.ReadAll(ctx(t), esdbclient.ReadAllOptions{}, 100))
	if err != nil || len(all) != 3 {
		t.Fatalf("read all: %v %v", all, err)
	}
	for i := 1; i < len(all); i++ {
		p, q := all[i-1].Position, all[i].Position
		if !(p.Commit < q.Commit || (p.Commit == q.Commit && p.Prepare < q.Prepare)) {
			t.Fatalf("positions not increasing: %+v then %+v", p, q)
		}
	}
	if all[0].Position.Commit == 0 || all[0].Position.Commit != all[1].Position.Commit {
		t.Fatalf("one append shares a commit position above zero: %+v %+v", all[0].Position, all[1].Position)
	}
	// Forwards from a position is inclusive.
	got, err := drain(c.ReadAll(ctx(t), esdbclient.ReadAllOptions{From: all[1].Position}, 100))
	if err != nil || len(got) != 2 || got[0].EventID != all[1].EventID {
		t.Fatalf("forwards from event 1: %v %v", got, err)
	}
	// Backwards from a position is exclusive.
	got, err = drain(c.ReadAll(ctx(t), esdbclient.ReadAllOptions{Direction: esdbclient.Backwards, From: all[2].Position}, 100))
	if err != nil || len(got) != 2 || got[0].EventID != all[1].EventID {
		t.Fatalf("backwards from event 2: %v %v", got, err)
	}
	got, err = drain(c.ReadAll(ctx(t), esdbclient.ReadAllOptions{Direction: esdbclient.Backwards, From: esdbclient.End{}}, 1))
	if err != nil || len(got) != 1 || got[0].EventID != all[2].EventID {
		t.Fatalf("backwards from end: %v %v", got, err)
	}
}

// rawRead calls Read directly: the client cannot filter reads or ask for
// string ids.
func rawRead(t *testing.T, srv *esdbfake.Server, opts *api.ReadReq_Options) []*api.ReadResp {
	t.Helper()
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rc, err := api.NewStreamsClient(conn).Read(ctx(t), &api.ReadReq{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	var out []*api.ReadResp
	for {
		m, err := rc.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

func TestReadAllFiltersAndStringIDs(t *testing.T) {
	srv := esdbfake.Start(t)
	c := client(t, srv)
	appendTo(t, c, "payment-1", esdbclient.Any{}, ev("Captured"))
	appendTo(t, c, "$stats-1", esdbclient.Any{}, ev("$statsCollected"))
	appendTo(t, c, "payout-1", esdbclient.Any{}, ev("Paid"))
	appendTo(t, c, "order-1", esdbclient.Any{}, ev("Captured"))

	all := &api.ReadReq_Options_All{All: &api.ReadReq_Options_AllOptions{AllOption: &api.ReadReq_Options_AllOptions_Start{Start: &shared.Empty{}}}}
	read := func(f *api.ReadReq_Options_FilterOptions, uuidOpt *api.ReadReq_Options_UUIDOption) []string {
		msgs := rawRead(t, srv, &api.ReadReq_Options{
			StreamOption: all,
			CountOption:  &api.ReadReq_Options_Count{Count: 100},
			FilterOption: &api.ReadReq_Options_Filter{Filter: f},
			UuidOption:   uuidOpt,
		})
		var streams []string
		for _, m := range msgs {
			e := m.GetEvent().GetEvent()
			if e == nil {
				t.Fatalf("read sent a non-event message %T", m.GetContent())
			}
			if uuidOpt != nil && uuidOpt.GetString_() != nil {
				if _, err := uuid.Parse(e.GetId().GetString_()); err != nil {
					t.Fatalf("string id %q: %v", e.GetId().GetString_(), err)
				}
			}
			streams = append(streams, string(e.GetStreamIdentifier().GetStreamName()))
		}
		return streams
	}
	expr := func(regex string, prefixes ...string) *api.ReadReq_Options_FilterOptions_Expression {
		return &api.ReadReq_Options_FilterOptions_Expression{Regex: regex, Prefix: prefixes}
	}
	check := func(name string, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: %v, want %v", name, got, want)
			}
		}
	}
	check("stream prefixes", read(&api.ReadReq_Options_FilterOptions{
		Filter: &api.ReadReq_Options_FilterOptions_StreamIdentifier{StreamIdentifier: expr("", "payment-", "payout-")},
	}, nil), "payment-1", "payout-1")
	check("stream regex", read(&api.ReadReq_Options_FilterOptions{
		Filter: &api.ReadReq_Options_FilterOptions_StreamIdentifier{StreamIdentifier: expr(`^pay(ment|out)-`)},
	}, nil), "payment-1", "payout-1")
	check("event type prefix", read(&api.ReadReq_Options_FilterOptions{
		Filter: &api.ReadReq_Options_FilterOptions_EventType{EventType: expr("", "Capt")},
	}, &api.ReadReq_Options_UUIDOption{Content: &api.ReadReq_Options_UUIDOption_String_{String_: &shared.Empty{}}}), "payment-1", "order-1")
	check("exclude system events", read(&api.ReadReq_Options_FilterOptions{
		Filter: &api.ReadReq_Options_FilterOptions_EventType{EventType: expr(`^[^\$].*`)},
	}, nil), "payment-1", "payout-1", "order-1")
}

func TestSubscribeToAllFiltered(t *testing.T) {
	srv := esdbfake.Start(t)
	c := client(t, srv)
	appendTo(t, c, "payment-0", esdbclient.Any{}, ev("Old"))
	sub, err := c.SubscribeToAll(ctx(t), esdbclient.SubscribeToAllOptions{
		From:               esdbclient.Start{},
		Filter:             &esdbclient.SubscriptionFilter{Type: esdbclient.StreamFilterType, Prefixes: []string{"payment-"}},
		MaxSearchWindow:    2,
		CheckpointInterval: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	next := func() *esdbclient.SubscriptionEvent {
		t.Helper()
		got := make(chan *esdbclient.SubscriptionEvent, 1)
		go func() { got <- sub.Recv() }()
		select {
		case e := <-got:
			if e.SubscriptionDropped != nil {
				t.Fatalf("dropped: %v", e.SubscriptionDropped.Error)
			}
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no subscription message within 10s")
			return nil
		}
	}
	if e := next(); e.EventAppeared == nil || e.EventAppeared.OriginalEvent().StreamID != "payment-0" {
		t.Fatalf("catch-up: %+v", e)
	}
	sawCaughtUp := false
	for !sawCaughtUp {
		e := next()
		switch {
		case e.CaughtUp != nil:
			sawCaughtUp = true
		case e.CheckPointReached != nil:
		default:
			t.Fatalf("before caught-up: %+v", e)
		}
	}
	for i := 0; i < 3; i++ {
		appendTo(t, c, "other-1", esdbclient.Any{}, ev("Noise"))
	}
	appendTo(t, c, "payment-1", esdbclient.Any{}, ev("New"))
	var checkpoints int
	for {
		e := next()
		if e.CheckPointReached != nil {
			checkpoints++
			continue
		}
		if e.EventAppeared == nil || e.EventAppeared.OriginalEvent().StreamID != "payment-1" {
			t.Fatalf("live: %+v", e)
		}
		break
	}
	if checkpoints == 0 {
		t.Fatal("no checkpoint while scanning filtered-out events")
	}
}

func TestSubscribeFromPositionIsExclusiveAndStreamSubscription(t *testing.T) {
	srv := esdbfake.Start(t)
	c := client(t, srv)
	appendTo(t, c, "s-1", esdbclient.Any{}, ev("A"), ev("B"))
	all, err := drain(c.ReadAll(ctx(t), esdbclient.ReadAllOptions{}, 10))
	if err != nil || len(all) != 2 {
		t.Fatal(err)
	}
	sub, err := c.SubscribeToAll(ctx(t), esdbclient.SubscribeToAllOptions{From: all[0].Position})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if e := sub.Recv(); e.EventAppeared == nil || e.EventAppeared.OriginalEvent().EventID != all[1].EventID {
		t.Fatalf("subscription from event 0 starts with %+v", e)
	}

	ssub, err := c.SubscribeToStream(ctx(t), "s-1", esdbclient.SubscribeToStreamOptions{From: esdbclient.Revision(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer ssub.Close()
	if e := ssub.Recv(); e.EventAppeared == nil || e.EventAppeared.OriginalEvent().EventNumber != 1 {
		t.Fatalf("stream subscription from revision 0 starts with %+v", e)
	}
	if e := ssub.Recv(); e.CaughtUp == nil {
		t.Fatalf("then %+v, want caught up", e)
	}
	appendTo(t, c, "t-1", esdbclient.Any{}, ev("X"))
	appendTo(t, c, "s-1", esdbclient.Revision(1), ev("C"))
	if e := ssub.Recv(); e.EventAppeared == nil || e.EventAppeared.OriginalEvent().EventNumber != 2 || e.EventAppeared.OriginalEvent().StreamID != "s-1" {
		t.Fatalf("live stream event %+v", e)
	}
}

func TestStopDropsSubscriptionsAndKeepsLog(t *testing.T) {
	srv := esdbfake.Start(t)
	c := client(t, srv)
	appendTo(t, c, "s-1", esdbclient.NoStream{}, ev("A"))
	sub, err := c.SubscribeToAll(ctx(t), esdbclient.SubscribeToAllOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if e := sub.Recv(); e.CaughtUp == nil {
		t.Fatalf("subscription from end: %+v, want caught up", e)
	}
	addr := srv.Addr()
	srv.Stop()
	if e := sub.Recv(); e.SubscriptionDropped == nil {
		t.Fatalf("after stop: %+v, want dropped", e)
	}
	if err := srv.Start(addr); err != nil {
		t.Fatal(err)
	}
	if srv.EventCount() != 1 {
		t.Fatalf("log lost across restart: %d events", srv.EventCount())
	}
}
