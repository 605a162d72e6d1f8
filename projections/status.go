package projections

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections/views"
)

// StatusOptions tune Status.
type StatusOptions struct {
	// LagCap stops counting one projection's lag at this many events (the
	// status then says LagCapped): the feed has no count, and a
	// far-behind projection must not make every reading walk the whole
	// history. 0 counts every event.
	LagCap int64
	// Inbox adds the webhook_inbox counts (a GROUP BY over the table).
	Inbox bool
	// InboxCounter, when set, gives the inbox counts instead of a count per
	// reading: for the readers that ask again and again (the metrics
	// refresher), it bounds what the count costs as the inbox grows.
	InboxCounter *InboxCounter
	// Settlement adds the last settlement import per provider and the open
	// reconciliation items per kind (when db is a SettlementStatusDB).
	Settlement bool
	// Now is the clock of LagSeconds; default time.Now.
	Now func() time.Time
}

// lagPage is how many events one read of the lag count asks the feed for.
const lagPage = 5000

// Status is the one computation of the projections' state: each
// checkpoint, the head, each projection's lag in events (counted by reading
// the configured feed between the checkpoint and the head, so it is right
// for every event store: the Postgres events table and EventStoreDB alike)
// and in seconds (the age of the oldest event not applied), whether a
// projector runs it, and optionally the inbox counts. `onceledger status`,
// GET /v1/projections and /metrics all report what it returns.
func Status(ctx context.Context, feed Feed, db AuditDB, opts StatusOptions) (views.Status, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	var rep views.Status
	// Checkpoints first: a checkpoint may legitimately pass a head read
	// earlier, never one read later.
	cps, err := db.Checkpoints(ctx)
	if err != nil {
		return rep, err
	}
	if rep.Head, err = feed.Head(ctx); err != nil {
		return rep, err
	}
	now := opts.Now()
	positions := make([]eventstore.Position, len(cps))
	for i, cp := range cps {
		positions[i] = cp.Position
	}
	lags, err := feedLags(ctx, feed, positions, rep.Head, opts.LagCap)
	if err != nil {
		return rep, err
	}
	rep.Projections = make([]views.ProjectionStatus, 0, len(cps))
	for _, cp := range cps {
		st := views.ProjectionStatus{
			Name: cp.Name, Position: cp.Position, Status: cp.Status,
			LastError: cp.LastError, ErrorPosition: cp.ErrorPosition, UpdatedAt: cp.UpdatedAt,
		}
		l := lags[cp.Position]
		st.Lag, st.LagCapped = l.n, l.capped
		if l.n > 0 {
			st.LagSeconds = max(0, now.Sub(l.oldest).Seconds())
		}
		if st.Active, err = db.LockHeld(ctx, LockActive, cp.Name); err != nil {
			return rep, err
		}
		rep.Projections = append(rep.Projections, st)
	}
	if opts.Settlement {
		if err := settlementStatus(ctx, db, &rep); err != nil {
			return rep, err
		}
	}
	if !opts.Inbox {
		return rep, nil
	}
	var counts map[string]int64
	if opts.InboxCounter != nil {
		counts, err = opts.InboxCounter.Counts(ctx, db)
	} else {
		counts, err = db.InboxCounts(ctx)
	}
	if err != nil {
		return rep, err
	}
	rep.Inbox = make(map[string]int64, len(views.InboxStatuses))
	for _, s := range views.InboxStatuses {
		rep.Inbox[s] = 0
	}
	for s, n := range counts {
		rep.Inbox[s] = n
	}
	return rep, nil
}

// feedLag is a projection's lag: n events after the checkpoint up to the
// head (at least n when capped), the oldest of them recorded at oldest.
type feedLag struct {
	n      int64
	capped bool
	oldest time.Time
}

// FeedCounter is a feed that counts its events between two positions
// without reading them (the Postgres event store, on the feed's index):
// n events in (after, upTo], at most limit (0: all; capped when there were
// more), the first of them recorded at oldest. Status counts lags with it
// when the feed has it: reading them made every poll of a projection's lag
// cost as much as the projection's catching up.
type FeedCounter interface {
	CountFeed(ctx context.Context, after, upTo eventstore.Position, limit int64) (n int64, oldest time.Time, capped bool, err error)
}

// feedLags counts the lag of each position (projections often share one:
// counted once). With a FeedCounter it counts each stretch between
// neighbouring positions once, from the head down, and stops at limit: a
// reading walks at most limit+1 entries of the feed's index however many
// projections stand behind, where counting each projection's lag alone
// walked up to limit per projection. Those counts were a quarter of the database
// time of serve's event-store connections during a settlement import, four projections each
// 100,000 events behind, /v1/projections polled five times a second
// (docs/benchmarks.md, "Where the machine's time goes").
func feedLags(ctx context.Context, feed Feed, positions []eventstore.Position, head eventstore.Position, limit int64) (map[eventstore.Position]feedLag, error) {
	out := make(map[eventstore.Position]feedLag, len(positions))
	c, ok := feed.(FeedCounter)
	if !ok {
		for _, p := range positions {
			if _, done := out[p]; done {
				continue
			}
			l, err := countLag(ctx, feed, p, head, limit)
			if err != nil {
				return nil, err
			}
			out[p] = l
		}
		return out, nil
	}
	ps := slices.Clone(positions)
	slices.SortFunc(ps, func(a, b eventstore.Position) int { // nearest the head first
		switch {
		case b.Less(a):
			return -1
		case a.Less(b):
			return 1
		}
		return 0
	})
	ps = slices.Compact(ps)
	var (
		acc         int64     // events in (p, head] counted so far
		upper       = head    // the stretch (p, upper] is counted next
		oldestAbove time.Time // the first event after upper, when there is one
		capped      bool      // acc passed limit: every lower position is capped too
	)
	for _, p := range ps {
		if !p.Less(head) {
			out[p] = feedLag{}
			continue
		}
		if capped { // only its age is read: the first event after it
			_, oldest, _, err := c.CountFeed(ctx, p, head, 1)
			if err != nil {
				return nil, err
			}
			out[p] = feedLag{n: limit, capped: true, oldest: oldest}
			continue
		}
		// The stretch's count, at most what is left of limit (then capped
		// says whether it holds more): 1 when nothing is left, to learn
		// whether p is beyond limit.
		var stretch int64
		if limit > 0 {
			stretch = max(1, limit-acc)
		}
		n, oldest, more, err := c.CountFeed(ctx, p, upper, stretch)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			oldestAbove = oldest
		}
		acc += n
		if limit > 0 && (more || acc > limit) {
			capped = true
			out[p] = feedLag{n: limit, capped: true, oldest: oldestAbove}
			continue
		}
		out[p] = feedLag{n: acc, oldest: oldestAbove}
		upper = p
	}
	return out, nil
}

// countLag counts the feed's events in (from, head], at most limit of them
// when limit > 0.
func countLag(ctx context.Context, feed Feed, from, head eventstore.Position, limit int64) (feedLag, error) {
	if c, ok := feed.(FeedCounter); ok {
		n, oldest, capped, err := c.CountFeed(ctx, from, head, limit)
		return feedLag{n: n, capped: capped, oldest: oldest}, err
	}
	var l feedLag
	for limit <= 0 || l.n < limit {
		size := int64(lagPage)
		if limit > 0 {
			size = min(size, limit-l.n)
		}
		evs, err := readUpTo(ctx, feed, from, &head, int(size))
		if err != nil || len(evs) == 0 {
			return l, err
		}
		if l.n == 0 {
			l.oldest = evs[0].RecordedAt
		}
		l.n += int64(len(evs))
		from = evs[len(evs)-1].Position
	}
	// At the limit: capped only if there is more.
	more, err := readUpTo(ctx, feed, from, &head, 1)
	l.capped = len(more) > 0
	return l, err
}

// StatusReader binds Status to a feed, a read-model database and options,
// for the readers that ask again and again: the API and the metrics
// refresher.
type StatusReader struct {
	Feed    Feed
	DB      AuditDB
	Options StatusOptions
}

// Status reads the status with the reader's options.
func (r StatusReader) Status(ctx context.Context) (views.Status, error) {
	return Status(ctx, r.Feed, r.DB, r.Options)
}

// Projections reads the status without the inbox counts.
func (r StatusReader) Projections(ctx context.Context) (views.Status, error) {
	opts := r.Options
	opts.Inbox = false
	return Status(ctx, r.Feed, r.DB, opts)
}

// SettlementStatusDB is the read-model database's settlement side of the
// status (readmodel.Store).
type SettlementStatusDB interface {
	LastImports(ctx context.Context) (map[string]time.Time, error)
	OpenItemCounts(ctx context.Context) (map[string]int64, error)
}

func settlementStatus(ctx context.Context, db AuditDB, rep *views.Status) error {
	sdb, ok := db.(SettlementStatusDB)
	if !ok {
		return nil
	}
	var err error
	if rep.LastImports, err = sdb.LastImports(ctx); err != nil {
		return err
	}
	rep.OpenItems, err = sdb.OpenItemCounts(ctx)
	return err
}

// InboxCountsDB counts webhook_inbox rows by status (AuditDB's part that
// InboxCounter reads).
type InboxCountsDB interface {
	InboxCounts(ctx context.Context) (map[string]int64, error)
}

// DefaultInboxCountRatio is InboxCounter's default Ratio.
const DefaultInboxCountRatio = 20

// InboxCounter bounds the cost of the inbox counts for a reader that asks
// every few seconds. The counts are a GROUP BY over the whole inbox, whose
// time grows with it: the metrics refresher asked for them every 5 s, and at
// a million deliveries each count was a parallel scan of the table
// (docs/benchmarks.md, "Where the machine's time goes"), a tenth of a
// two-core machine during a settlement import. The counter counts again
// only when its last counts are older than Ratio times what that count
// took, and answers those counts otherwise: the count then takes at most
// 1/Ratio of one database connection's time, whatever the inbox's size,
// and a small inbox is still counted at every reading. The counts it
// answers are exact as of when they were counted, never estimated.
type InboxCounter struct {
	// Ratio is how many times its own duration a count is kept for (0:
	// DefaultInboxCountRatio).
	Ratio int
	// Now is the clock; default time.Now.
	Now func() time.Time

	mu     sync.Mutex // one count at a time: readers meanwhile wait for it rather than count too
	counts map[string]int64
	at     time.Time     // when the last count ended
	took   time.Duration // how long it took
}

// Counts answers the inbox counts, counted again by db when the last ones
// have been kept for their time. The map is the caller's.
func (c *InboxCounter) Counts(ctx context.Context, db InboxCountsDB) (map[string]int64, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ratio := c.Ratio
	if ratio <= 0 {
		ratio = DefaultInboxCountRatio
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	start := now()
	if c.counts != nil && start.Sub(c.at) < time.Duration(ratio)*c.took {
		return maps.Clone(c.counts), nil
	}
	counts, err := db.InboxCounts(ctx)
	if err != nil {
		return nil, err
	}
	end := now()
	c.counts, c.at, c.took = counts, end, end.Sub(start)
	return maps.Clone(counts), nil
}
