// Package esdbfake is a TEST DOUBLE: an in-process gRPC server that speaks the
// subset of the EventStoreDB / KurrentDB client protocol that
// github.com/EventStore/EventStore-Client-Go/v4 uses for appends, reads and
// catch-up subscriptions, so the esdb adapter (and anything built on it) can
// be tested without a database server. Only tests import it.
//
// It implements event_store.client.streams.Streams (Append, Read of a stream
// and of $all, subscriptions to a stream and to $all, with stream-identifier
// and event-type filters by prefix or regex) and
// event_store.client.server_features.ServerFeatures (so the client's
// discovery sees a single node; no gossip is needed for esdb://host:port
// connection strings). Delete, Tombstone, BatchAppend and persistent
// subscriptions are not implemented and answer Unimplemented.
//
// Semantics follow the EventStoreDB documentation on optimistic concurrency
// and idempotence
// (https://eventstore.org/docs/dotnet-api/optimistic-concurrency-and-idempotence/index.html#idempotence,
// https://docs.kurrent.io/clients/node/v1.2/appending-events.html):
//
//   - an append with an exact expected revision or NoStream succeeds when the
//     stream is at that revision; when the stream is past it and the event ids
//     of the append equal those written right after the expected revision,
//     the append is an idempotent success that writes nothing; a partial or
//     no match is a wrong expected version;
//   - StreamExists requires at least one event; Any never conflicts; both are
//     idempotent on a best-effort basis (here: when the ids are found in the
//     stream, in order, starting at the first one);
//   - reading a stream that does not exist answers a StreamNotFound message;
//   - reading $all from a position includes the event at that position,
//     subscribing from a position starts after it;
//   - a subscription answers a confirmation first, then events, CaughtUp when
//     it reaches the end, and for filtered $all subscriptions checkpoints
//     every (max search window × checkpoint interval multiplier) events
//     scanned.
//
// Every recorded event carries the system metadata the client needs: "type",
// "content-type" and "created" (.NET ticks, i.e. 100 ns units, since the Unix
// epoch, as a decimal string: that is what the server sends and what the
// client parses; the client calls log.Fatalf when it is missing). Read
// responses never contain message kinds the client's read iterator does not
// know (it panics on them). Positions are byte-offset-like, start well above
// zero and grow monotonically; the events of one append share a commit
// position and have increasing prepare positions, as in the real log.
package esdbfake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/serverfeatures"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc"
)

// record is one stored event.
type record struct {
	id          uuid.UUID
	stream      string
	revision    uint64
	eventType   string
	contentType string
	data        []byte
	metadata    []byte // custom (user) metadata
	created     int64  // ticks since the Unix epoch
	commit      uint64
	prepare     uint64
}

// after reports whether r lies strictly after the position (commit, prepare).
func (r *record) after(commit, prepare uint64) bool {
	if r.commit != commit {
		return r.commit > commit
	}
	return r.prepare > prepare
}

// firstPosition leaves room below the first event, as the real log does
// (epoch records precede it), so that Position{0,0} never names an event.
const firstPosition = 1024

// Server is the fake node. Its state (the log) survives Stop and Start, so a
// test can take the node away and bring it back on the same address.
type Server struct {
	mu       sync.Mutex
	log      []*record
	streams  map[string][]*record
	nextPos  uint64
	changed  chan struct{} // closed and replaced after every write
	delay    time.Duration
	appends  int // append requests that reached the server
	grpc     *grpc.Server
	listener net.Listener
	addr     string
}

// New returns a fake node with an empty log; call Start to serve it.
func New() *Server {
	return &Server{
		streams: make(map[string][]*record),
		nextPos: firstPosition,
		changed: make(chan struct{}),
	}
}

// Start serves the node on addr ("127.0.0.1:0" picks a free port).
func (s *Server) Start(addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("esdbfake: listen %s: %w", addr, err)
	}
	gs := grpc.NewServer()
	api.RegisterStreamsServer(gs, &streamsService{s: s})
	serverfeatures.RegisterServerFeaturesServer(gs, featuresService{})

	s.mu.Lock()
	if s.grpc != nil {
		s.mu.Unlock()
		_ = lis.Close()
		return errors.New("esdbfake: already started")
	}
	s.grpc, s.listener, s.addr = gs, lis, lis.Addr().String()
	s.mu.Unlock()

	go func() { _ = gs.Serve(lis) }()
	return nil
}

// Stop closes the listener and every open call, subscriptions included.
// The log is kept.
func (s *Server) Stop() {
	s.mu.Lock()
	gs := s.grpc
	s.grpc, s.listener = nil, nil
	s.mu.Unlock()
	if gs != nil {
		gs.Stop()
	}
}

// Addr is host:port of the last Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// URL is the connection string for the esdb client: insecure, single node.
func (s *Server) URL() string { return "esdb://" + s.Addr() + "?tls=false" }

// SetAppendDelay makes every append wait d before it is applied (or until
// the call's deadline), to test client timeouts.
func (s *Server) SetAppendDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// SetNextPosition makes the next appended event start at log position p
// (commit and prepare), so that a test can reach positions a real node
// reaches only after years, or never: the server keeps positions as signed
// 64-bit numbers, so its commit positions stay below 2^63, while the
// protocol and the client carry them as uint64. The log only grows: a p
// below the next position is refused.
func (s *Server) SetNextPosition(p uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p < s.nextPos {
		return fmt.Errorf("esdbfake: next position %d is below the log's end %d", p, s.nextPos)
	}
	s.nextPos = p
	return nil
}

// EventCount is the number of events in the log ($all).
func (s *Server) EventCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// AppendRequests is the number of append calls that reached the server,
// successful or not.
func (s *Server) AppendRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends
}

// Start starts a fake node on a free loopback port and stops it when the
// test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := New()
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// featuresService answers the client's discovery with a server version and
// the methods the fake supports. BatchAppend is not advertised, so the
// client keeps to Append.
type featuresService struct {
	serverfeatures.UnimplementedServerFeaturesServer
}

func (featuresService) GetSupportedMethods(_ context.Context, _ *shared.Empty) (*serverfeatures.SupportedMethods, error) {
	const svc = "event_store.client.streams.streams"
	return &serverfeatures.SupportedMethods{
		EventStoreServerVersion: "24.10.0",
		Methods: []*serverfeatures.SupportedMethod{
			{ServiceName: svc, MethodName: "read"},
			{ServiceName: svc, MethodName: "append"},
		},
	}, nil
}
