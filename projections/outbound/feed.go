package outbound

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// Source is what the feed reads: the event store's committed global feed
// (both event stores implement it). ReadAll never returns an event while an
// earlier one may still commit (the feed horizon), so a page's end is a
// position nothing can later appear before.
type Source interface {
	ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error)
	Changes(ctx context.Context) (<-chan struct{}, error)
}

var _ Source = eventstore.Store(nil)

// Limits of a page.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	MaxWait      = 60 * time.Second
	// scanChunk is how many stored events one read takes; maxScan bounds
	// what one page scans past events its type filter drops, so that a
	// rare type cannot make one request read the whole history: the page
	// comes back empty with a next cursor past what was scanned.
	scanChunk = 500
	maxScan   = 20 * scanChunk
	// pollEvery: an event can become readable without a notification (an
	// older transaction that wrote no event ends and lets the horizon
	// pass), so a waiting page also looks again this often.
	pollEvery = 250 * time.Millisecond
)

// ErrUnknownType: a type filter names no public type.
var ErrUnknownType = errors.New("unknown event type")

// ErrTooManyTypes: a type filter names more distinct types than the
// vocabulary has, so at least one is unknown; refused before any is looked
// up (a filter repeated 60,000 times cost a second of CPU per page).
var ErrTooManyTypes = errors.New("more distinct event types than the vocabulary has")

// Query asks for one page.
type Query struct {
	After eventstore.Position
	Types []string      // public types; none = every type
	Limit int           // default DefaultLimit, at most MaxLimit
	Wait  time.Duration // long poll when nothing is new; at most MaxWait
}

// Page is one answer: the events in feed order, and the position a next
// page starts after (the last event scanned, matching or not; After when
// nothing was scanned).
type Page struct {
	Events []Event
	Next   eventstore.Position
}

// Feed pages through the public events of a Source.
type Feed struct {
	src Source

	mu      sync.Mutex
	shared  bool          // a Start-ed listener wakes waiting pages
	changed chan struct{} // closed on the next wake-up, then replaced

	drainOnce sync.Once
	draining  chan struct{} // closed by Drain
}

// NewFeed returns the feed over src.
func NewFeed(src Source) *Feed {
	return &Feed{src: src, changed: make(chan struct{}), draining: make(chan struct{})}
}

// Drain ends every waiting page now, with what it has (as if its wait had
// run out), and makes later pages answer without waiting: a server shutting
// down drains in-flight requests, and a long poll would otherwise hold the
// drain up for its whole wait (up to MaxWait).
func (f *Feed) Drain() { f.drainOnce.Do(func() { close(f.draining) }) }

// Start listens for commits until ctx ends, waking every waiting page: one
// listener for all long polls (a Postgres LISTEN connection each would not
// scale). Without it, each waiting page listens on its own.
func (f *Feed) Start(ctx context.Context) error {
	ch, err := f.src.Changes(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.shared = true
	f.mu.Unlock()
	go func() {
		for range ch {
			f.wake()
		}
		f.mu.Lock()
		f.shared = false
		f.mu.Unlock()
		f.wake()
	}()
	return nil
}

func (f *Feed) wake() {
	f.mu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// Page answers q: at most q.Limit events after q.After whose type is in
// q.Types; with q.Wait and nothing new, it waits up to q.Wait for a commit.
func (f *Feed) Page(ctx context.Context, q Query) (Page, error) {
	q, err := normalize(q)
	if err != nil {
		return Page{}, err
	}
	var deadline <-chan time.Time
	var own <-chan struct{}
	select {
	case <-f.draining:
		q.Wait = 0
	default:
	}
	if q.Wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, q.Wait)
		defer cancel()
		deadline = time.After(q.Wait)
		if own, err = f.listener(wctx); err != nil {
			return Page{}, err
		}
	}
	page := Page{Next: q.After}
	// scanned counts what this page has looked at over all its wake-ups:
	// a waiting page is bound by the same maxScan as one that does not
	// wait, and answers with what it has and its cursor when it reaches it
	// (a rare type's poll otherwise scanned every new event for its whole
	// wait).
	scanned := 0
	for {
		f.mu.Lock()
		changed := f.changed
		f.mu.Unlock()
		n, err := f.scan(ctx, q, &page, maxScan-scanned)
		if err != nil {
			return Page{}, err
		}
		scanned += n
		if len(page.Events) > 0 || q.Wait <= 0 || scanned >= maxScan {
			return page, nil
		}
		q.After = page.Next
		select {
		case <-changed:
		case <-own:
		case <-time.After(pollEvery):
		case <-deadline:
			return page, nil
		case <-f.draining:
			return page, nil
		case <-ctx.Done():
			return Page{}, ctx.Err()
		}
	}
}

// listener returns this page's own wake-ups when no shared listener runs.
func (f *Feed) listener(ctx context.Context) (<-chan struct{}, error) {
	f.mu.Lock()
	shared := f.shared
	f.mu.Unlock()
	if shared {
		return nil, nil
	}
	ch, err := f.src.Changes(ctx)
	if err != nil {
		return nil, fmt.Errorf("outbound feed: listen: %w", err)
	}
	return ch, nil
}

// scan reads after q.After until the page is full, the feed is exhausted or
// budget events were looked at, appending matches to page; it returns how
// many it looked at.
func (f *Feed) scan(ctx context.Context, q Query, page *Page, budget int) (int, error) {
	chunk := scanChunk
	if len(q.Types) == 0 {
		chunk = readSize(q.Limit) // every event matches: read about the page
	}
	scanned := 0
	for scanned < budget {
		recs, err := f.src.ReadAll(ctx, q.After, chunk)
		if err != nil {
			return scanned, fmt.Errorf("outbound feed: %w", err)
		}
		for _, r := range recs {
			e, err := FromRecorded(r)
			if err != nil {
				return scanned, fmt.Errorf("outbound feed: event %s at %s: %w", r.ID, r.Position, err)
			}
			scanned++
			q.After, page.Next = r.Position, r.Position
			if len(q.Types) == 0 || wanted(q.Types, e.Type) {
				page.Events = append(page.Events, e)
				if len(page.Events) == q.Limit {
					return scanned, nil
				}
			}
		}
		if len(recs) < chunk {
			return scanned, nil
		}
	}
	return scanned, nil
}

// wanted says whether typ is in types (sorted by normalize).
func wanted(types []string, typ string) bool {
	_, ok := slices.BinarySearch(types, typ)
	return ok
}

// readSize is how many events a page of limit events reads at once when
// every type matches: limit rounded up to a power of two (at least 16).
// The event store shares one query among concurrent reads of the same
// position and size (postgres.feedTail), and waiting polls all read at
// the head: with sizes bucketed, 1,000 polls with 1,000 distinct limits
// make 7 distinct reads per wake-up instead of 1,000. The page keeps only
// its limit; what it reads beyond costs little (the head has few events).
func readSize(limit int) int {
	n := 16
	for n < limit {
		n *= 2
	}
	return n
}

func normalize(q Query) (Query, error) {
	switch {
	case q.Limit <= 0:
		q.Limit = DefaultLimit
	case q.Limit > MaxLimit:
		q.Limit = MaxLimit
	}
	if q.Wait > MaxWait {
		q.Wait = MaxWait
	}
	types, err := NormalizeTypes(q.Types)
	if err != nil {
		return q, err
	}
	q.Types = types
	return q, nil
}

// VocabularySize is how many public types there are: the most distinct
// types a filter may name.
func VocabularySize() int { return len(sortedTypes) }

// NormalizeTypes is a type filter deduplicated and sorted: ErrTooManyTypes
// as soon as it names more distinct types than the vocabulary has,
// ErrUnknownType for a type no public event has. Nil stays nil (every
// type).
func NormalizeTypes(types []string) ([]string, error) {
	if len(types) == 0 {
		return nil, nil
	}
	seen := make(map[string]struct{}, len(sortedTypes))
	for _, t := range types {
		seen[t] = struct{}{}
		if len(seen) > len(sortedTypes) {
			return nil, fmt.Errorf("%w: at most %d", ErrTooManyTypes, len(sortedTypes))
		}
	}
	out := make([]string, 0, len(seen))
	for _, t := range types { // in the caller's order: the first unknown is named
		if _, ok := seen[t]; !ok {
			continue
		}
		delete(seen, t)
		if _, ok := slices.BinarySearch(sortedTypes, t); !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownType, t)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}
