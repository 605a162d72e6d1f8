// Package eventstoretest is the one contract suite every eventstore.Store
// adapter must pass (postgres, esdb). It uses unique random stream names and
// reads the global feed from positions it took itself where it can, so it
// can run against a shared server holding other data; it tolerates other
// writers, never relies on the feed being empty.
package eventstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// Harness is one store under test.
type Harness struct {
	Store eventstore.Store
	// HoldAppend starts an append (as with eventstore.Any) whose transaction
	// stays open until commit is called. The harness must end the
	// transaction at test cleanup if commit was never called. Nil for
	// adapters whose server orders commits itself (EventStoreDB); the
	// late-commit case then logs that and returns.
	HoldAppend func(ctx context.Context, stream string, events []eventstore.EventData) (commit func() error, err error)
}

// visibleTimeout bounds how long the suite waits for committed events to
// show up in ReadAll: with Postgres, a transaction open anywhere on the
// server (another test package) legitimately delays visibility.
const visibleTimeout = 20 * time.Second

// Run runs the contract suite; newHarness is called once per subtest.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"AppendAndReadStream", testAppendAndReadStream},
		{"ReadMissingStreamIsEmpty", testReadMissingStream},
		{"ExpectedAny", testExpectedAny},
		{"ExpectedNoStream", testExpectedNoStream},
		{"ExpectedStreamExists", testExpectedStreamExists},
		{"ExpectedExact", testExpectedExact},
		{"IdempotentReappend", testIdempotentReappend},
		{"ReadAllPagesInOrder", testReadAllPages},
		{"Head", testHead},
		{"ChangesWakesUpAfterAppend", testChanges},
		{"ConcurrentExactAppendsOneStream", testConcurrentExact},
		{"LateCommitIsNotSkipped", testLateCommit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newHarness(t))
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newStream returns a stream name no other run uses.
func newStream(t *testing.T, kind string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("contract%s-%s", kind, hex.EncodeToString(b[:]))
}

func newEvents(n int, label string) []eventstore.EventData {
	evs := make([]eventstore.EventData, n)
	for i := range evs {
		evs[i] = eventstore.EventData{
			ID:   uuid.New(),
			Type: "ContractTested",
			Data: []byte(fmt.Sprintf(`{"label":%q,"i":%d}`, label, i)),
		}
	}
	return evs
}

func mustAppend(ctx context.Context, t *testing.T, s eventstore.Store, stream string, exp eventstore.ExpectedVersion, evs []eventstore.EventData) eventstore.AppendResult {
	t.Helper()
	res, err := s.Append(ctx, stream, exp, evs)
	if err != nil {
		t.Fatalf("append %d events to %s (expect %s): %v", len(evs), stream, exp, err)
	}
	return res
}

func mustRead(ctx context.Context, t *testing.T, s eventstore.Store, stream string) []eventstore.RecordedEvent {
	t.Helper()
	evs, err := s.ReadStream(ctx, stream)
	if err != nil {
		t.Fatalf("read %s: %v", stream, err)
	}
	return evs
}

// wantWrongVersion checks err is the one wrong-version error, with details.
// actual is the stream's version; adapters may report -2 (unknown).
func wantWrongVersion(t *testing.T, err error, stream string, actual int64) {
	t.Helper()
	if err == nil {
		t.Fatalf("append to %s succeeded, want wrong expected version", stream)
	}
	if !errors.Is(err, eventstore.ErrWrongVersion) {
		t.Fatalf("error %v does not match ErrWrongVersion", err)
	}
	var wv *eventstore.WrongVersionError
	if !errors.As(err, &wv) {
		t.Fatalf("error %v is not a *WrongVersionError", err)
	}
	if wv.Stream != stream {
		t.Errorf("WrongVersionError.Stream = %q, want %q", wv.Stream, stream)
	}
	if wv.Actual != actual && wv.Actual != -2 {
		t.Errorf("WrongVersionError.Actual = %d, want %d (or -2)", wv.Actual, actual)
	}
	if errors.Is(err, eventstore.ErrUnavailable) {
		t.Errorf("wrong version error %v also matches ErrUnavailable", err)
	}
}

// wantStream checks the stream holds exactly want, in order, versions 0..
func wantStream(ctx context.Context, t *testing.T, s eventstore.Store, stream string, want []eventstore.EventData) []eventstore.RecordedEvent {
	t.Helper()
	got := mustRead(ctx, t, s, stream)
	if len(got) != len(want) {
		t.Fatalf("stream %s has %d events, want %d", stream, len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.ID != w.ID || g.Type != w.Type || g.StreamID != stream || g.Version != uint64(i) {
			t.Fatalf("stream %s event %d = {id %s type %s stream %s version %d}, want {id %s type %s stream %s version %d}",
				stream, i, g.ID, g.Type, g.StreamID, g.Version, w.ID, w.Type, stream, i)
		}
		if !jsonEqual(g.Data, w.Data) {
			t.Errorf("stream %s event %d data = %s, want %s", stream, i, g.Data, w.Data)
		}
		if len(w.Metadata) == 0 && len(g.Metadata) != 0 {
			t.Errorf("stream %s event %d metadata = %s, want none", stream, i, g.Metadata)
		}
		if len(w.Metadata) != 0 && !jsonEqual(g.Metadata, w.Metadata) {
			t.Errorf("stream %s event %d metadata = %s, want %s", stream, i, g.Metadata, w.Metadata)
		}
		if g.RecordedAt.IsZero() {
			t.Errorf("stream %s event %d has no RecordedAt", stream, i)
		}
	}
	return got
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func testAppendAndReadStream(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	stream := newStream(t, "basic")
	evs := newEvents(3, "basic")
	evs[1].Metadata = []byte(`{"correlation":"abc","n":1}`)
	res := mustAppend(ctx, t, h.Store, stream, eventstore.NoStream, evs)
	if res.NextExpected != 2 {
		t.Errorf("NextExpected = %d, want 2", res.NextExpected)
	}
	more := newEvents(2, "basic-more")
	res = mustAppend(ctx, t, h.Store, stream, eventstore.Exact(2), more)
	if res.NextExpected != 4 {
		t.Errorf("NextExpected = %d, want 4", res.NextExpected)
	}
	got := wantStream(ctx, t, h.Store, stream, append(evs, more...))
	for i := 1; i < len(got); i++ {
		if !got[i-1].Position.Less(got[i].Position) {
			t.Errorf("positions not increasing in stream order: %s then %s", got[i-1].Position, got[i].Position)
		}
	}
	// Another stream is independent.
	other := newStream(t, "basic")
	oevs := newEvents(1, "other")
	mustAppend(ctx, t, h.Store, other, eventstore.NoStream, oevs)
	wantStream(ctx, t, h.Store, other, oevs)
	wantStream(ctx, t, h.Store, stream, append(evs, more...))
}

func testReadMissingStream(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	evs, err := h.Store.ReadStream(ctx, newStream(t, "missing"))
	if err != nil {
		t.Fatalf("read missing stream: %v", err)
	}
	if len(evs) != 0 {
		t.Fatalf("missing stream has %d events", len(evs))
	}
}

func testExpectedAny(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	stream := newStream(t, "any")
	a, b := newEvents(1, "a"), newEvents(2, "b")
	if res := mustAppend(ctx, t, h.Store, stream, eventstore.Any, a); res.NextExpected != 0 {
		t.Errorf("first Any append: NextExpected = %d, want 0", res.NextExpected)
	}
	if res := mustAppend(ctx, t, h.Store, stream, eventstore.Any, b); res.NextExpected != 2 {
		t.Errorf("second Any append: NextExpected = %d, want 2", res.NextExpected)
	}
	wantStream(ctx, t, h.Store, stream, append(a, b...))
}

func testExpectedNoStream(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	stream := newStream(t, "nostream")
	a := newEvents(2, "a")
	mustAppend(ctx, t, h.Store, stream, eventstore.NoStream, a)
	_, err := h.Store.Append(ctx, stream, eventstore.NoStream, newEvents(1, "late"))
	wantWrongVersion(t, err, stream, 1)
	wantStream(ctx, t, h.Store, stream, a)
}

func testExpectedStreamExists(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	stream := newStream(t, "exists")
	_, err := h.Store.Append(ctx, stream, eventstore.StreamExists, newEvents(1, "early"))
	wantWrongVersion(t, err, stream, -1)
	wantStream(ctx, t, h.Store, stream, nil)

	a, b := newEvents(1, "a"), newEvents(1, "b")
	mustAppend(ctx, t, h.Store, stream, eventstore.NoStream, a)
	if res := mustAppend(ctx, t, h.Store, stream, eventstore.StreamExists, b); res.NextExpected != 1 {
		t.Errorf("StreamExists append: NextExpected = %d, want 1", res.NextExpected)
	}
	wantStream(ctx, t, h.Store, stream, append(a, b...))
}

func testExpectedExact(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	stream := newStream(t, "exact")
	// Exact on a missing stream fails: there is no version 0 yet.
	_, err := h.Store.Append(ctx, stream, eventstore.Exact(0), newEvents(1, "early"))
	wantWrongVersion(t, err, stream, -1)

	a, b := newEvents(3, "a"), newEvents(1, "b")
	mustAppend(ctx, t, h.Store, stream, eventstore.NoStream, a)
	for _, stale := range []uint64{0, 1, 3, 7} {
		_, err := h.Store.Append(ctx, stream, eventstore.Exact(stale), newEvents(1, "stale"))
		wantWrongVersion(t, err, stream, 2)
	}
	if res := mustAppend(ctx, t, h.Store, stream, eventstore.Exact(2), b); res.NextExpected != 3 {
		t.Errorf("Exact(2) append: NextExpected = %d, want 3", res.NextExpected)
	}
	wantStream(ctx, t, h.Store, stream, append(a, b...))
}

func testIdempotentReappend(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	stream := newStream(t, "idem")
	a := newEvents(2, "a")
	mustAppend(ctx, t, h.Store, stream, eventstore.NoStream, a)
	// A retried first append (same ids, same expectation): no-op success.
	res, err := h.Store.Append(ctx, stream, eventstore.NoStream, a)
	if err != nil {
		t.Fatalf("identical NoStream re-append: %v", err)
	}
	if res.NextExpected != 1 {
		t.Errorf("identical NoStream re-append: NextExpected = %d, want 1", res.NextExpected)
	}
	b := newEvents(1, "b")
	mustAppend(ctx, t, h.Store, stream, eventstore.Exact(1), b)
	res, err = h.Store.Append(ctx, stream, eventstore.Exact(1), b)
	if err != nil {
		t.Fatalf("identical Exact(1) re-append: %v", err)
	}
	if res.NextExpected != 2 {
		t.Errorf("identical Exact(1) re-append: NextExpected = %d, want 2", res.NextExpected)
	}
	// The first append retried after the stream moved on is still a no-op.
	if _, err := h.Store.Append(ctx, stream, eventstore.NoStream, a); err != nil {
		t.Fatalf("identical NoStream re-append after more events: %v", err)
	}
	// New ids at a taken position are a conflict, not idempotence.
	_, err = h.Store.Append(ctx, stream, eventstore.Exact(1), newEvents(1, "c"))
	wantWrongVersion(t, err, stream, 2)
	wantStream(ctx, t, h.Store, stream, append(a, b...))
}

// feedFrom pages the feed after `after` with the given page size until it
// has seen every id in want (or times out), checking page invariants, and
// returns the events of want's streams in feed order.
func feedFrom(ctx context.Context, t *testing.T, s eventstore.Store, after eventstore.Position, limit int, streams map[string]bool, want int) []eventstore.RecordedEvent {
	t.Helper()
	deadline := time.Now().Add(visibleTimeout)
	var ours []eventstore.RecordedEvent
	pos := after
	for {
		page, err := s.ReadAll(ctx, pos, limit)
		if err != nil {
			t.Fatalf("read all after %s: %v", pos, err)
		}
		if len(page) > limit {
			t.Fatalf("read all with limit %d returned %d events", limit, len(page))
		}
		for _, e := range page {
			if !pos.Less(e.Position) {
				t.Fatalf("read all after %s returned event at %s (not strictly after, or out of order)", pos, e.Position)
			}
			pos = e.Position
			if streams[e.StreamID] {
				ours = append(ours, e)
			}
		}
		if len(ours) >= want {
			return ours
		}
		if len(page) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d events visible in the feed after %s", len(ours), want, visibleTimeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func testReadAllPages(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	head0, err := h.Store.Head(ctx)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	sa, sb, sc := newStream(t, "feed"), newStream(t, "feed"), newStream(t, "feed")
	streams := map[string]bool{sa: true, sb: true, sc: true}
	var order []eventstore.EventData
	appendTo := func(stream string, exp eventstore.ExpectedVersion, n int) {
		evs := newEvents(n, stream)
		mustAppend(ctx, t, h.Store, stream, exp, evs)
		order = append(order, evs...)
	}
	appendTo(sa, eventstore.NoStream, 2)
	appendTo(sb, eventstore.NoStream, 1)
	appendTo(sa, eventstore.Exact(1), 3)
	appendTo(sc, eventstore.NoStream, 2)
	appendTo(sb, eventstore.Exact(0), 1)

	for _, limit := range []int{1, 2, 3, 1000} {
		got := feedFrom(ctx, t, h.Store, head0, limit, streams, len(order))
		if len(got) != len(order) {
			t.Fatalf("limit %d: feed has %d of our events, want %d", limit, len(got), len(order))
		}
		for i, e := range got {
			if e.ID != order[i].ID {
				t.Fatalf("limit %d: feed event %d is %s (%s v%d), want %s", limit, i, e.ID, e.StreamID, e.Version, order[i].ID)
			}
			if e.Type != order[i].Type || !jsonEqual(e.Data, order[i].Data) || e.StreamID == "" {
				t.Fatalf("limit %d: feed event %d = %+v, want data of %+v", limit, i, e, order[i])
			}
		}
	}
	// A page of one after head0 is exactly one event (ours exist after it),
	// and reading after it excludes it.
	first, err := h.Store.ReadAll(ctx, head0, 1)
	if err != nil || len(first) != 1 {
		t.Fatalf("read all after %s limit 1: %d events, %v", head0, len(first), err)
	}
	next, err := h.Store.ReadAll(ctx, first[0].Position, 1)
	if err != nil || len(next) != 1 {
		t.Fatalf("read all after %s limit 1: %d events, %v", first[0].Position, len(next), err)
	}
	if next[0].ID == first[0].ID || !first[0].Position.Less(next[0].Position) {
		t.Fatalf("read all after %s is not exclusive: got %s at %s", first[0].Position, next[0].ID, next[0].Position)
	}
}

func testHead(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	head0, err := h.Store.Head(ctx)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	stream := newStream(t, "head")
	evs := newEvents(3, "head")
	mustAppend(ctx, t, h.Store, stream, eventstore.NoStream, evs)
	got := feedFrom(ctx, t, h.Store, head0, 100, map[string]bool{stream: true}, len(evs))
	last := got[len(got)-1].Position
	head1, err := h.Store.Head(ctx)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	if head1.Less(last) {
		t.Fatalf("head %s is before our last visible event at %s", head1, last)
	}
	if !head0.Less(head1) {
		t.Fatalf("head did not advance: %s then %s", head0, head1)
	}
	after, err := h.Store.ReadAll(ctx, head1, 1000)
	if err != nil {
		t.Fatalf("read all after head: %v", err)
	}
	for _, e := range after {
		if e.StreamID == stream {
			t.Fatalf("read all after head %s returned our event at %s", head1, e.Position)
		}
	}
}

func testChanges(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	ch, err := h.Store.Changes(lctx)
	if err != nil {
		t.Fatalf("changes: %v", err)
	}
	stream := newStream(t, "changes")
	for round := 0; round < 2; round++ {
		// Drop a wake-up that may be pending from before.
		time.Sleep(100 * time.Millisecond)
		select {
		case <-ch:
		default:
		}
		mustAppend(ctx, t, h.Store, stream, eventstore.Any, newEvents(1, "changes"))
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatal("changes channel closed while the context is live")
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: no wake-up within 10s after an append", round)
		}
	}
	stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("changes channel not closed within 10s after its context ended")
		}
	}
}

func testConcurrentExact(t *testing.T, h Harness) {
	ctx := ctxFor(t)
	const writers = 32
	stream := newStream(t, "race")
	var (
		start    = make(chan struct{})
		wg       sync.WaitGroup
		mu       sync.Mutex
		won      = map[uint64]int{} // NextExpected → writer
		mine     = map[uuid.UUID]int{}
		failures []error
		lost     int
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ev := newEvents(1, fmt.Sprintf("writer-%d", w))
			for attempt := 0; ; attempt++ {
				if attempt > 10*writers {
					mu.Lock()
					failures = append(failures, fmt.Errorf("writer %d: no success after %d attempts", w, attempt))
					mu.Unlock()
					return
				}
				cur, err := h.Store.ReadStream(ctx, stream)
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Errorf("writer %d: read: %w", w, err))
					mu.Unlock()
					return
				}
				res, err := h.Store.Append(ctx, stream, eventstore.ExpectFor(len(cur)), ev)
				mu.Lock()
				switch {
				case err == nil:
					if prev, dup := won[res.NextExpected]; dup {
						failures = append(failures, fmt.Errorf("version %d won by writers %d and %d", res.NextExpected, prev, w))
					}
					if res.NextExpected != uint64(len(cur)) {
						failures = append(failures, fmt.Errorf("writer %d read %d events but landed at version %d", w, len(cur), res.NextExpected))
					}
					won[res.NextExpected] = w
					mine[ev[0].ID] = w
				case errors.Is(err, eventstore.ErrWrongVersion):
					var wv *eventstore.WrongVersionError
					if !errors.As(err, &wv) {
						failures = append(failures, fmt.Errorf("writer %d: %v is not a *WrongVersionError", w, err))
					}
					lost++
				default:
					failures = append(failures, fmt.Errorf("writer %d: %w", w, err))
				}
				mu.Unlock()
				if err == nil || !errors.Is(err, eventstore.ErrWrongVersion) {
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range failures {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	if len(won) != writers {
		t.Fatalf("%d versions won, want %d", len(won), writers)
	}
	if lost == 0 {
		t.Errorf("no writer ever lost a race among %d concurrent writers; the test did not exercise conflicts", writers)
	}
	got := mustRead(ctx, t, h.Store, stream)
	if len(got) != writers {
		t.Fatalf("stream has %d events, want %d", len(got), writers)
	}
	for i, e := range got {
		if e.Version != uint64(i) {
			t.Fatalf("event %d has version %d (gap or duplicate)", i, e.Version)
		}
		w, ok := mine[e.ID]
		if !ok {
			t.Fatalf("event %d (%s) was not reported appended by any writer", i, e.ID)
		}
		if won[uint64(i)] != w {
			t.Fatalf("version %d holds writer %d's event, but writer %d was told it won it", i, w, won[uint64(i)])
		}
		delete(mine, e.ID)
	}
	t.Logf("%d writers, %d lost races", writers, lost)
}

func testLateCommit(t *testing.T, h Harness) {
	if h.HoldAppend == nil {
		t.Log("adapter has no HoldAppend: its server orders commits, no late-commit window to test")
		return
	}
	ctx := ctxFor(t)
	held, later := newStream(t, "held"), newStream(t, "later")
	heldEvs, laterEvs := newEvents(1, "held"), newEvents(1, "later")

	commit, err := h.HoldAppend(ctx, held, heldEvs)
	if err != nil {
		t.Fatalf("hold append: %v", err)
	}
	var once sync.Once
	var commitErr error
	doCommit := func() error {
		once.Do(func() { commitErr = commit() })
		return commitErr
	}
	t.Cleanup(func() { _ = doCommit() })

	mustAppend(ctx, t, h.Store, later, eventstore.NoStream, laterEvs)
	// The later append is committed and readable by stream...
	wantStream(ctx, t, h.Store, later, laterEvs)
	// ...but the feed must not pass the open one.
	var whileHeld []eventstore.RecordedEvent
	pos := eventstore.Start
	for {
		page, err := h.Store.ReadAll(ctx, pos, 500)
		if err != nil {
			t.Fatalf("read all while held: %v", err)
		}
		if len(page) == 0 {
			break
		}
		whileHeld = append(whileHeld, page...)
		pos = page[len(page)-1].Position
	}
	for _, e := range whileHeld {
		if e.StreamID == later || e.StreamID == held {
			t.Fatalf("read all returned %s event at %s while an earlier append is still open", e.StreamID, e.Position)
		}
	}
	headHeld, err := h.Store.Head(ctx)
	if err != nil {
		t.Fatalf("head while held: %v", err)
	}

	if err := doCommit(); err != nil {
		t.Fatalf("commit held append: %v", err)
	}
	got := feedFrom(ctx, t, h.Store, eventstore.Start, 500, map[string]bool{held: true, later: true}, 2)
	if len(got) != 2 || got[0].ID != heldEvs[0].ID || got[1].ID != laterEvs[0].ID {
		ids := make([]string, len(got))
		for i, e := range got {
			ids[i] = e.StreamID + "/" + e.ID.String()
		}
		t.Fatalf("after commit the feed has %v, want held %s then later %s, once each", ids, heldEvs[0].ID, laterEvs[0].ID)
	}
	heldPos := got[0].Position
	for _, e := range whileHeld {
		if !e.Position.Less(heldPos) {
			t.Fatalf("while held, read all returned an event at %s, not before the held append's %s", e.Position, heldPos)
		}
	}
	if !headHeld.Less(heldPos) {
		t.Fatalf("while held, head was %s, not before the held append's %s", headHeld, heldPos)
	}
}
