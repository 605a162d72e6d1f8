// Package esdb is the EventStoreDB / KurrentDB event store adapter: it
// implements the eventstore.Store port on top of the official gRPC client
// (github.com/EventStore/EventStore-Client-Go/v4/esdb).
//
// Mapping:
//   - streams are EventStoreDB streams, versions are stream revisions;
//   - the global feed is $all, restricted to the application's streams (by
//     default those starting with "payment-" or "payout-"; never system
//     streams or system event types), and a feed Position is the $all
//     {Commit, Prepare} position;
//   - appends carry the deterministic event ids, so a retried append with a
//     concrete expected revision (NoStream or Exact) is idempotent on the
//     server; with Any it is best-effort only;
//   - a wrong expected version is an *eventstore.WrongVersionError, a
//     connection failure or a deadline wraps eventstore.ErrUnavailable.
//
// Client pitfalls handled here: esdb.FromError does not unwrap and reports
// success inverted, so errors are classified with errors.As; the client's
// calls wait for node discovery deaf to their contexts, a failed discovery
// closes the client for good and strands the calls queued behind it, and
// closing a client under a queued call panics, so every call runs in its own
// goroutine bounded by its context, Dial never lets discovery give up, a
// closed client is replaced and a client is closed only when idle (see
// calls.go); reads of $all cannot be filtered server-side by this client
// version (only subscriptions can), so ReadAll and Head filter client-side.
package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	esdbclient "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/bankline"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/period"
)

var _ eventstore.Store = (*Store)(nil)

// DefaultStreamPrefixes are the streams of the global feed: payments and
// payouts (see delivery.Event.StreamID), the accounting periods' calendar
// (domain/period.StreamID), and push subscriptions' operator items
// (delivery.SubscriptionStream), and expected payments
// (domain/expectation.StreamID).
var DefaultStreamPrefixes = []string{delivery.PaymentStreamPrefix, delivery.PayoutStreamPrefix, period.StreamID,
	delivery.SubscriptionStreamPrefix,
	// Provider balances: assertions, opening balances, adjustments.
	assertion.StreamPrefix, assertion.AdjustmentStreamPrefix,
	// Bank accounts: their statement lines, statements and items.
	bankline.StreamPrefix,
	// Expected payments.
	expectation.StreamPrefix}

// Option configures a Store.
type Option func(*Store)

// WithStreamPrefixes sets the stream name prefixes that make up the global
// feed (ReadAll, Head, Changes). With none, every non-system stream counts.
func WithStreamPrefixes(prefixes ...string) Option {
	return func(s *Store) { s.prefixes = append([]string(nil), prefixes...) }
}

// Store is the EventStoreDB event store. It is safe for concurrent use.
type Store struct {
	prefixes []string

	mu     sync.Mutex
	gen    *generation
	config *esdbclient.Configuration // set by Dial: the store owns its clients and may replace one
	closed bool                      // Close was called: no more calls, no replacement
}

// New wraps a client. The caller keeps ownership of it: Close does not close
// it, and a client closed by a failed discovery stays closed.
func New(client *esdbclient.Client, opts ...Option) *Store {
	s := &Store{gen: newGeneration(client), prefixes: DefaultStreamPrefixes}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Dial parses an EventStoreDB connection string (e.g.
// "esdb://kurrentdb:2113?tls=false") and returns a Store that owns its
// client. No connection is made until the first call.
//
// Unless the connection string sets maxDiscoverAttempts, the client is told
// never to give up discovering the node: a client whose discovery fails
// stops serving its internal request queue without releasing the calls
// already queued on it (they wait forever, deaf to their contexts), so an
// outage under concurrent load would strand callers. Every call of the
// Store is bounded by its context instead (see run).
func Dial(connString string, opts ...Option) (*Store, error) {
	cfg, err := esdbclient.ParseConnectionString(connString)
	if err != nil {
		return nil, fmt.Errorf("esdb: connection string: %w", err)
	}
	cfg.Logger = slogLogger
	if !strings.Contains(strings.ToLower(connString), "maxdiscoverattempts=") {
		cfg.MaxDiscoverAttempts = math.MaxInt32
	}
	client, err := esdbclient.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("esdb: client: %w", err)
	}
	s := New(client, opts...)
	s.config = cfg
	return s, nil
}

// slogLogger routes the client's logging to slog; the client's default
// prints every discovery attempt to the standard logger.
func slogLogger(level esdbclient.LogLevel, format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	// The client reports every subscription it drops as an error, even one
	// dropped because its context ended (Changes' listener, at every clean
	// stop of a projector): that is no news. Its warnings are about single
	// discovery attempts, several a second while the node is away; the
	// calls that fail meanwhile say so to their callers.
	if level == esdbclient.LogWarn || (level == esdbclient.LogError && strings.Contains(msg, "context canceled")) {
		level = esdbclient.LogDebug
	}
	switch level {
	case esdbclient.LogError:
		slog.Warn("esdb client: " + msg)
	default:
		slog.Debug("esdb client: " + msg)
	}
}

// Close closes the client if the store owns it (Dial): at once when no call
// is running on it, else when the last one ends (closing the client under a
// running call makes that call panic inside the client).
func (s *Store) Close() error {
	if s.config == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.retireLocked(s.gen)
	return nil
}

func isCode(err error, code esdbclient.ErrorCode) bool {
	var e *esdbclient.Error
	return errors.As(err, &e) && e.Code() == code
}

// classify wraps err for callers: timeouts and connection failures wrap
// eventstore.ErrUnavailable (retry later), cancellation stays cancellation.
func classify(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return fmt.Errorf("esdb: %s: %w: %w", op, eventstore.ErrUnavailable, ctxErr)
		}
		return fmt.Errorf("esdb: %s: %w", op, ctxErr)
	}
	var e *esdbclient.Error
	if errors.As(err, &e) {
		switch e.Code() {
		case esdbclient.ErrorUnavailable, esdbclient.ErrorCodeDeadlineExceeded,
			esdbclient.ErrorCodeConnectionClosed, esdbclient.ErrorCodeNotLeader, esdbclient.ErrorAborted,
			// The client reports a transport that broke mid-call ("could
			// not send append request header … EOF") with the unknown code:
			// nothing says the request was refused, so it may be retried.
			esdbclient.ErrorCodeUnknown:
			return fmt.Errorf("esdb: %s: %w: %w", op, eventstore.ErrUnavailable, err)
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("esdb: %s: %w: %w", op, eventstore.ErrUnavailable, err)
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
		return fmt.Errorf("esdb: %s: %w: %w", op, eventstore.ErrUnavailable, err)
	}
	return fmt.Errorf("esdb: %s: %w", op, err)
}

func expectedRevision(e eventstore.ExpectedVersion) esdbclient.ExpectedRevision {
	if v, ok := e.Exact(); ok {
		return esdbclient.Revision(v)
	}
	switch {
	case e.IsNoStream():
		return esdbclient.NoStream{}
	case e.IsStreamExists():
		return esdbclient.StreamExists{}
	default:
		return esdbclient.Any{}
	}
}

// Append writes events atomically if expected holds.
func (s *Store) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events []eventstore.EventData) (eventstore.AppendResult, error) {
	if stream == "" {
		return eventstore.AppendResult{}, errors.New("esdb: append: empty stream id")
	}
	data := make([]esdbclient.EventData, len(events))
	seen := make(map[uuid.UUID]bool, len(events))
	for i, e := range events {
		// Checked here as the Postgres adapter does: the server would take a
		// duplicate id, and the client would invent an id for uuid.Nil.
		if e.Type == "" {
			return eventstore.AppendResult{}, fmt.Errorf("esdb: append to %s: event %d has no type", stream, i)
		}
		if e.ID == uuid.Nil || seen[e.ID] {
			return eventstore.AppendResult{}, fmt.Errorf("esdb: append to %s: event %d: id %s is nil or appears twice", stream, i, e.ID)
		}
		seen[e.ID] = true
		data[i] = esdbclient.EventData{
			EventID:     e.ID,
			EventType:   e.Type,
			ContentType: esdbclient.ContentTypeJson,
			Data:        e.Data,
			Metadata:    e.Metadata,
		}
	}
	opts := esdbclient.AppendToStreamOptions{ExpectedRevision: expectedRevision(expected)}
	res, err := do(ctx, s, func(ctx context.Context, c *esdbclient.Client) (*esdbclient.WriteResult, error) {
		return c.AppendToStream(ctx, stream, opts, data...)
	})
	if err != nil {
		var e *esdbclient.Error
		if errors.As(err, &e) && e.Code() == esdbclient.ErrorCodeWrongExpectedVersion {
			return eventstore.AppendResult{}, &eventstore.WrongVersionError{
				Stream:   stream,
				Expected: expected,
				Actual:   actualRevision(e),
			}
		}
		return eventstore.AppendResult{}, classify(ctx, "append to "+stream, err)
	}
	if len(events) == 0 {
		// The server checked the expectation; the client reports an empty
		// stream's "no stream" as revision 1, so ask for the last event.
		return s.lastRevision(ctx, stream)
	}
	return eventstore.AppendResult{NextExpected: res.NextExpectedVersion}, nil
}

// lastRevision is the version of the stream's last event, 0 when it has none
// (as the Postgres adapter answers an empty append).
func (s *Store) lastRevision(ctx context.Context, stream string) (eventstore.AppendResult, error) {
	page, err := do(ctx, s, func(ctx context.Context, c *esdbclient.Client) ([]*esdbclient.ResolvedEvent, error) {
		return readN(func() (*esdbclient.ReadStream, error) {
			return c.ReadStream(ctx, stream, esdbclient.ReadStreamOptions{Direction: esdbclient.Backwards, From: esdbclient.End{}}, 1)
		})
	})
	if isCode(err, esdbclient.ErrorCodeResourceNotFound) || (err == nil && len(page) == 0) {
		return eventstore.AppendResult{}, nil
	}
	if err != nil {
		return eventstore.AppendResult{}, classify(ctx, "read "+stream, err)
	}
	return eventstore.AppendResult{NextExpected: page[0].OriginalEvent().EventNumber}, nil
}

// wrongVersionRE reads the current revision out of the client's message
// ("wrong expected version: expecting '%s' but got '%s'"): the client keeps
// it in no field.
var wrongVersionRE = regexp.MustCompile(`but got '([^']*)'`)

func actualRevision(e *esdbclient.Error) int64 {
	if e.Err() == nil {
		return -2
	}
	m := wrongVersionRE.FindStringSubmatch(e.Err().Error())
	if m == nil {
		return -2
	}
	if m[1] == "no_stream" {
		return -1
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || v < 0 {
		return -2
	}
	return v
}

// streamPage is how many events ReadStream asks for per call.
const streamPage = 512

// ReadStream returns a stream's events in version order; a stream that
// does not exist is empty.
func (s *Store) ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error) {
	return s.ReadStreamFrom(ctx, stream, 0)
}

// ReadStreamFrom returns a stream's events from revision start on (the
// two-phase journal's kept folds read only what they lack).
func (s *Store) ReadStreamFrom(ctx context.Context, stream string, start int) ([]eventstore.RecordedEvent, error) {
	var out []eventstore.RecordedEvent
	for {
		from := esdbclient.Revision(uint64(start + len(out))) // a copy: the call may outlive this iteration
		page, err := do(ctx, s, func(ctx context.Context, c *esdbclient.Client) ([]*esdbclient.ResolvedEvent, error) {
			return readN(func() (*esdbclient.ReadStream, error) {
				return c.ReadStream(ctx, stream, esdbclient.ReadStreamOptions{Direction: esdbclient.Forwards, From: from}, streamPage)
			})
		})
		if isCode(err, esdbclient.ErrorCodeResourceNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, classify(ctx, "read "+stream, err)
		}
		for _, ev := range page {
			if r := ev.OriginalEvent(); r != nil {
				out = append(out, recorded(r))
			}
		}
		if len(page) < streamPage {
			return out, nil
		}
	}
}

// readN drains one read call.
func readN(open func() (*esdbclient.ReadStream, error)) ([]*esdbclient.ResolvedEvent, error) {
	rs, err := open()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []*esdbclient.ResolvedEvent
	for {
		ev, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
}

func recorded(r *esdbclient.RecordedEvent) eventstore.RecordedEvent {
	meta := r.UserMetadata
	if len(meta) == 0 {
		meta = nil
	}
	return eventstore.RecordedEvent{
		ID:         r.EventID,
		StreamID:   r.StreamID,
		Version:    r.EventNumber,
		Type:       r.EventType,
		Data:       r.Data,
		Metadata:   meta,
		Position:   eventstore.Position{Commit: r.Position.Commit, Prepare: r.Position.Prepare},
		RecordedAt: r.CreatedDate,
	}
}

// inFeed reports whether an event of $all belongs to the global feed.
func (s *Store) inFeed(r *esdbclient.RecordedEvent) bool {
	if r == nil || strings.HasPrefix(r.StreamID, "$") || strings.HasPrefix(r.EventType, "$") {
		return false
	}
	if len(s.prefixes) == 0 {
		return true
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(r.StreamID, p) {
			return true
		}
	}
	return false
}

// allPage bounds one $all read; pages are larger than small limits because
// other streams' events are filtered out client-side.
const allPage = 1024

// ReadAll returns up to limit feed events strictly after the position. The
// server's forward read from a position includes the event at it, so the
// event at exactly `after` (and at each page boundary) is dropped.
func (s *Store) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	if limit <= 0 {
		return nil, nil
	}
	var from esdbclient.AllPosition = esdbclient.Start{}
	skip, skipping := after, after != eventstore.Start
	if skipping {
		from = esdbclient.Position{Commit: after.Commit, Prepare: after.Prepare}
	}
	size := uint64(limit) + 1
	if size < 64 {
		size = 64
	}
	if size > allPage {
		size = allPage
	}
	var out []eventstore.RecordedEvent
	for {
		at := from // a copy: the call may outlive this iteration
		page, err := do(ctx, s, func(ctx context.Context, c *esdbclient.Client) ([]*esdbclient.ResolvedEvent, error) {
			return readN(func() (*esdbclient.ReadStream, error) {
				return c.ReadAll(ctx, esdbclient.ReadAllOptions{Direction: esdbclient.Forwards, From: at}, size)
			})
		})
		if err != nil {
			return nil, classify(ctx, "read $all", err)
		}
		for _, ev := range page {
			r := ev.OriginalEvent()
			if r == nil {
				continue
			}
			pos := eventstore.Position{Commit: r.Position.Commit, Prepare: r.Position.Prepare}
			if skipping && pos == skip {
				continue
			}
			if !s.inFeed(r) {
				continue
			}
			out = append(out, recorded(r))
			if len(out) == limit {
				return out, nil
			}
		}
		if uint64(len(page)) < size {
			return out, nil
		}
		last := page[len(page)-1].OriginalEvent()
		if last == nil {
			return out, nil
		}
		from = last.Position
		skip, skipping = eventstore.Position{Commit: last.Position.Commit, Prepare: last.Position.Prepare}, true
	}
}

// headPage is how many events Head looks at per backward read.
const headPage = 64

// Head is the position of the last feed event (Start when there is none).
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	var from esdbclient.AllPosition = esdbclient.End{}
	var bound *esdbclient.Position // events must lie strictly before it
	for {
		at := from // a copy: the call may outlive this iteration
		page, err := do(ctx, s, func(ctx context.Context, c *esdbclient.Client) ([]*esdbclient.ResolvedEvent, error) {
			return readN(func() (*esdbclient.ReadStream, error) {
				return c.ReadAll(ctx, esdbclient.ReadAllOptions{Direction: esdbclient.Backwards, From: at}, headPage)
			})
		})
		if err != nil {
			return eventstore.Start, classify(ctx, "read $all backwards", err)
		}
		for _, ev := range page {
			r := ev.OriginalEvent()
			if r == nil || (bound != nil && !before(r.Position, *bound)) {
				continue
			}
			if s.inFeed(r) {
				return eventstore.Position{Commit: r.Position.Commit, Prepare: r.Position.Prepare}, nil
			}
		}
		if len(page) < headPage {
			return eventstore.Start, nil
		}
		last := page[len(page)-1].OriginalEvent()
		if last == nil {
			return eventstore.Start, nil
		}
		p := last.Position
		from, bound = p, &p
	}
}

func before(p, q esdbclient.Position) bool {
	if p.Commit != q.Commit {
		return p.Commit < q.Commit
	}
	return p.Prepare < q.Prepare
}
