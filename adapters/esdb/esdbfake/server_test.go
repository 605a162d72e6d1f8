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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
)

func client(t *testing.T, srv *esdbfake.Server) *esdbclient.Client {
	t.Helper()
	cfg, err := esdbclient.ParseConnectionString(srv.URL())
	require.NoError(t, err)
	cfg.Logger = esdbclient.NoopLogging()
	c, err := esdbclient.NewClient(cfg)
	require.NoError(t, err)
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
	require.NoError(t, err, "append to %s", stream)
	return res
}

// errorCode is the EventStoreDB error code of err; ErrorCodeUnknown when err
// is nil or not an *esdb.Error.
func errorCode(err error) esdbclient.ErrorCode {
	var e *esdbclient.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return esdbclient.ErrorCodeUnknown
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
	require.NoError(t, err)
	assert.True(t, v.Major == 24 && v.Minor == 10, "server version %+v", v)
}

func TestWrongExpectedVersionAndIdempotence(t *testing.T) {
	c := client(t, esdbfake.Start(t))
	a, b := ev("A"), ev("B")
	res := appendTo(t, c, "s-1", esdbclient.NoStream{}, a, b)
	require.True(t, res.NextExpectedVersion == 1 && res.CommitPosition != 0, "write result %+v", res)
	// Same ids after the same expectation: success, nothing written.
	again := appendTo(t, c, "s-1", esdbclient.NoStream{}, a, b)
	require.True(t, again.NextExpectedVersion == 1 && again.CommitPosition == res.CommitPosition && again.PreparePosition == res.PreparePosition,
		"idempotent write result %+v, first %+v", again, res)
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
		assert.Equal(t, esdbclient.ErrorCodeWrongExpectedVersion, errorCode(err), "%s: %v, want wrong expected version", tc.name, err)
	}
	_, err := c.AppendToStream(ctx(t), "s-2", esdbclient.AppendToStreamOptions{ExpectedRevision: esdbclient.StreamExists{}}, ev("X"))
	assert.Equal(t, esdbclient.ErrorCodeWrongExpectedVersion, errorCode(err), "stream exists on a missing stream: %v", err)
	got, err := drain(c.ReadStream(ctx(t), "s-1", esdbclient.ReadStreamOptions{}, 100))
	require.NoError(t, err, "stream after conflicts")
	require.Len(t, got, 2, "stream after conflicts")
	assert.Equal(t, a.EventID, got[0].EventID, "stream after conflicts: first event")
	assert.Equal(t, b.EventID, got[1].EventID, "stream after conflicts: second event")
}

func TestReadStream(t *testing.T) {
	c := client(t, esdbfake.Start(t))
	evs := []esdbclient.EventData{ev("A"), ev("B"), ev("C"), ev("D")}
	evs[1].Metadata = []byte(`{"m":1}`)
	appendTo(t, c, "s-1", esdbclient.NoStream{}, evs...)

	numbers := func(evs []*esdbclient.RecordedEvent) []uint64 {
		var out []uint64
		for _, e := range evs {
			out = append(out, e.EventNumber)
		}
		return out
	}
	got, err := drain(c.ReadStream(ctx(t), "s-1", esdbclient.ReadStreamOptions{From: esdbclient.Revision(1)}, 2))
	require.NoError(t, err, "forwards from 1, 2 events")
	require.Equal(t, []uint64{1, 2}, numbers(got), "forwards from 1, 2 events: %v", got)
	require.True(t, got[0].EventType == "B" && got[0].ContentType == "application/json" && string(got[0].UserMetadata) == `{"m":1}` &&
		!got[0].CreatedDate.Before(time.Now().Add(-time.Minute)) && !got[0].CreatedDate.After(time.Now().Add(time.Minute)),
		"recorded event %+v", got[0])
	got, err = drain(c.ReadStream(ctx(t), "s-1", esdbclient.ReadStreamOptions{Direction: esdbclient.Backwards, From: esdbclient.End{}}, 3))
	require.NoError(t, err, "backwards from end")
	require.Len(t, got, 3, "backwards from end: %v", got)
	require.True(t, got[0].EventNumber == 3 && got[2].EventNumber == 1, "backwards from end: %v", numbers(got))
	got, err = drain(c.ReadStream(ctx(t), "s-1", esdbclient.ReadStreamOptions{Direction: esdbclient.Backwards, From: esdbclient.Revision(1)}, 10))
	require.NoError(t, err, "backwards from 1")
	require.Equal(t, []uint64{1, 0}, numbers(got), "backwards from 1: %v", got)
	_, err = drain(c.ReadStream(ctx(t), "nope", esdbclient.ReadStreamOptions{}, 10))
	assert.Equal(t, esdbclient.ErrorCodeResourceNotFound, errorCode(err), "missing stream: %v", err)
}

func TestReadAllPositions(t *testing.T) {
	c := client(t, esdbfake.Start(t))
	appendTo(t, c, "s-1", esdbclient.Any{}, ev("A"), ev("B"))
	appendTo(t, c, "t-1", esdbclient.Any{}, ev("C"))
	all, err := drain(c.ReadAll(ctx(t), esdbclient.ReadAllOptions{}, 100))
	require.NoError(t, err, "read all")
	require.Len(t, all, 3, "read all: %v", all)
	for i := 1; i < len(all); i++ {
		p, q := all[i-1].Position, all[i].Position
		require.True(t, p.Commit < q.Commit || (p.Commit == q.Commit && p.Prepare < q.Prepare), "positions not increasing: %+v then %+v", p, q)
	}
	require.True(t, all[0].Position.Commit != 0 && all[0].Position.Commit == all[1].Position.Commit,
		"one append shares a commit position above zero: %+v %+v", all[0].Position, all[1].Position)
	// readFrom reads $all from a position and checks the count and the first event.
	readFrom := func(name string, opts esdbclient.ReadAllOptions, count uint64, n int, first uuid.UUID) {
		t.Helper()
		got, err := drain(c.ReadAll(ctx(t), opts, count))
		require.NoError(t, err, name)
		require.Len(t, got, n, "%s: %v", name, got)
		assert.Equal(t, first, got[0].EventID, "%s: first event", name)
	}
	// Forwards from a position is inclusive.
	readFrom("forwards from event 1", esdbclient.ReadAllOptions{From: all[1].Position}, 100, 2, all[1].EventID)
	// Backwards from a position is exclusive.
	readFrom("backwards from event 2", esdbclient.ReadAllOptions{Direction: esdbclient.Backwards, From: all[2].Position}, 100, 2, all[1].EventID)
	readFrom("backwards from end", esdbclient.ReadAllOptions{Direction: esdbclient.Backwards, From: esdbclient.End{}}, 1, 1, all[2].EventID)
}

// rawRead calls Read directly: the client cannot filter reads or ask for
// string ids.
func rawRead(t *testing.T, srv *esdbfake.Server, opts *api.ReadReq_Options) []*api.ReadResp {
	t.Helper()
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	rc, err := api.NewStreamsClient(conn).Read(ctx(t), &api.ReadReq{Options: opts})
	require.NoError(t, err)
	var out []*api.ReadResp
	for {
		m, err := rc.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
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
			require.NotNil(t, e, "read sent a non-event message %T", m.GetContent())
			if uuidOpt != nil && uuidOpt.GetString_() != nil {
				_, err := uuid.Parse(e.GetId().GetString_())
				require.NoError(t, err, "string id %q", e.GetId().GetString_())
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
		require.Equal(t, want, got, name)
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
	require.NoError(t, err)
	defer sub.Close()

	next := func() *esdbclient.SubscriptionEvent {
		t.Helper()
		got := make(chan *esdbclient.SubscriptionEvent, 1)
		go func() { got <- sub.Recv() }()
		select {
		case e := <-got:
			require.Nil(t, e.SubscriptionDropped, "dropped")
			return e
		case <-time.After(10 * time.Second):
			require.Fail(t, "no subscription message within 10s")
			return nil
		}
	}
	e := next()
	require.True(t, e.EventAppeared != nil && e.EventAppeared.OriginalEvent().StreamID == "payment-0", "catch-up: %+v", e)
	sawCaughtUp := false
	for !sawCaughtUp {
		e := next()
		switch {
		case e.CaughtUp != nil:
			sawCaughtUp = true
		case e.CheckPointReached != nil:
		default:
			require.Fail(t, "an event before caught-up", "%+v", e)
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
		require.True(t, e.EventAppeared != nil && e.EventAppeared.OriginalEvent().StreamID == "payment-1", "live: %+v", e)
		break
	}
	assert.NotZero(t, checkpoints, "no checkpoint while scanning filtered-out events")
}

func TestSubscribeFromPositionIsExclusiveAndStreamSubscription(t *testing.T) {
	srv := esdbfake.Start(t)
	c := client(t, srv)
	appendTo(t, c, "s-1", esdbclient.Any{}, ev("A"), ev("B"))
	all, err := drain(c.ReadAll(ctx(t), esdbclient.ReadAllOptions{}, 10))
	require.NoError(t, err)
	require.Len(t, all, 2)
	sub, err := c.SubscribeToAll(ctx(t), esdbclient.SubscribeToAllOptions{From: all[0].Position})
	require.NoError(t, err)
	defer sub.Close()
	e := sub.Recv()
	require.True(t, e.EventAppeared != nil && e.EventAppeared.OriginalEvent().EventID == all[1].EventID, "subscription from event 0 starts with %+v", e)

	ssub, err := c.SubscribeToStream(ctx(t), "s-1", esdbclient.SubscribeToStreamOptions{From: esdbclient.Revision(0)})
	require.NoError(t, err)
	defer ssub.Close()
	e = ssub.Recv()
	require.True(t, e.EventAppeared != nil && e.EventAppeared.OriginalEvent().EventNumber == 1, "stream subscription from revision 0 starts with %+v", e)
	e = ssub.Recv()
	require.NotNil(t, e.CaughtUp, "then %+v, want caught up", e)
	appendTo(t, c, "t-1", esdbclient.Any{}, ev("X"))
	appendTo(t, c, "s-1", esdbclient.Revision(1), ev("C"))
	e = ssub.Recv()
	assert.True(t, e.EventAppeared != nil && e.EventAppeared.OriginalEvent().EventNumber == 2 && e.EventAppeared.OriginalEvent().StreamID == "s-1",
		"live stream event %+v", e)
}

func TestStopDropsSubscriptionsAndKeepsLog(t *testing.T) {
	srv := esdbfake.Start(t)
	c := client(t, srv)
	appendTo(t, c, "s-1", esdbclient.NoStream{}, ev("A"))
	sub, err := c.SubscribeToAll(ctx(t), esdbclient.SubscribeToAllOptions{})
	require.NoError(t, err)
	defer sub.Close()
	e := sub.Recv()
	require.NotNil(t, e.CaughtUp, "subscription from end: %+v, want caught up", e)
	addr := srv.Addr()
	srv.Stop()
	e = sub.Recv()
	require.NotNil(t, e.SubscriptionDropped, "after stop: %+v, want dropped", e)
	require.NoError(t, srv.Start(addr))
	assert.Equal(t, 1, srv.EventCount(), "log lost across restart")
}
