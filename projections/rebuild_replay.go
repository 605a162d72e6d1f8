package projections

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// The replay reads and decodes the feed and hands every batch to each
// lane in feed order; what a lane does with its share is the write side
// (rebuild_write.go: lane.write). The seam between them is a replayBatch
// on a channel each way: in, the decoded batches; out, each batch once the
// lane has committed it.

// replayStats accumulates the busy times of a rebuild's reader and decoder.
type replayStats struct{ read, decode time.Duration }

// phases are the busy times of the replay pipeline: reading the feed,
// decoding, each lane's writes.
func (s *replayStats) phases(lanes []*lane) []Phase {
	out := []Phase{{Name: "read", Duration: s.read}, {Name: "decode", Duration: s.decode}}
	for _, l := range lanes {
		out = append(out, Phase{Name: "write " + l.name(), Duration: l.busy})
	}
	return out
}

// replayBatch is one batch of the feed on its way through the lanes.
type replayBatch struct {
	seq  int
	envs []Envelope
	left atomic.Int32 // lanes still applying it
}

// bulkLoad replays the feed into the shadows of the stored replay's lanes
// (made now if the checksum pass left none) as far as it goes, at bulk
// speed, while the live projectors run.
func (r *rebuild) bulkLoad(ctx context.Context) error {
	if r.lanes == nil {
		r.lanes = lanesOf(r.projs, false)
	}
	if err := r.replay(ctx); err != nil {
		return err
	}
	r.phase(PhaseReplay)
	return nil
}

// catchUp replays what the feed got during the bulk load (it took a
// while), while the live projectors still run, so that the pause after it
// is short.
func (r *rebuild) catchUp(ctx context.Context) error {
	if err := r.replay(ctx); err != nil {
		return err
	}
	r.phase("catch-up")
	return nil
}

// replay brings the stored replay's shadows as far as the feed goes.
func (r *rebuild) replay(ctx context.Context) error {
	var err error
	r.shadowAt, err = replayShadow(ctx, r.feed, r.db, r.lanes, &r.stats, r.shadowAt, nil, r.opts.BatchSize, r.progress)
	return err
}

// replayTo brings the shadows of lanes to target (the feed may hold back
// for a moment a position it showed).
func (r *rebuild) replayTo(ctx context.Context, lanes []*lane, target eventstore.Position) error {
	if err := retryShort(ctx, func() (bool, error) {
		var err error
		r.shadowAt, err = replayShadow(ctx, r.feed, r.db, lanes, &r.stats, r.shadowAt, &target, r.opts.BatchSize, r.progress)
		return !r.shadowAt.Less(target), err
	}); err != nil {
		return fmt.Errorf("bring the shadow to %s: %w", target, err)
	}
	return nil
}

// replayShadow applies the feed after from (up to and including *upTo, if
// set) to the shadow tables of lanes, and returns the position reached.
//
// It is a pipeline: one goroutine reads batches (a query on the event
// store's connection), another decodes them (on two cores when there are),
// and each lane writes its share on its own read-model connection, so that
// the database's work and this process's overlap. A batch counts as
// replayed once every lane has committed it.
func replayShadow(ctx context.Context, feed Feed, db ShadowDB, lanes []*lane, stats *replayStats, from eventstore.Position, upTo *eventstore.Position, size int, progress func(int)) (eventstore.Position, error) {
	g, gctx := errgroup.WithContext(ctx)
	raw := make(chan []eventstore.RecordedEvent, 1)
	g.Go(func() error {
		defer close(raw)
		return readBatches(gctx, dataOnly(feed), stats, from, upTo, size, raw)
	})
	laneIn := make([]chan *replayBatch, len(lanes))
	for i := range laneIn {
		laneIn[i] = make(chan *replayBatch, 2)
	}
	g.Go(func() error {
		defer func() {
			for _, c := range laneIn {
				close(c)
			}
		}()
		return decodeBatches(gctx, stats, raw, laneIn)
	})
	done := make(chan *replayBatch, 2*len(lanes))
	for i, l := range lanes {
		g.Go(func() error { return l.write(gctx, db, laneIn[i], done) })
	}
	errc := make(chan error, 1)
	go func() {
		errc <- g.Wait()
		close(done)
	}()
	from = countReplayed(done, from, progress)
	if err := <-errc; err != nil {
		return from, err
	}
	// The reader also stops when ctx ends, without a word: not the end of
	// the feed.
	return from, ctx.Err()
}

// readBatches reads the feed after from (up to *upTo if set) in batches of
// size onto out, until the feed (or ctx) ends.
func readBatches(ctx context.Context, feed Feed, stats *replayStats, from eventstore.Position, upTo *eventstore.Position, size int, out chan<- []eventstore.RecordedEvent) error {
	for at := from; ; {
		t := time.Now()
		evs, err := readUpTo(ctx, feed, at, upTo, size)
		stats.read += time.Since(t)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		select {
		case out <- evs:
		case <-ctx.Done():
			return ctx.Err()
		}
		at = evs[len(evs)-1].Position
	}
}

// decodeBatches decodes each batch read and hands it to every lane, in
// sequence; a batch cut short by an undecodable event goes out up to it,
// then the error ends the replay.
func decodeBatches(ctx context.Context, stats *replayStats, raw <-chan []eventstore.RecordedEvent, laneIn []chan *replayBatch) error {
	seq := 0
	for evs := range raw {
		t := time.Now()
		envs, err := decodeParallel(evs)
		stats.decode += time.Since(t)
		if len(envs) > 0 {
			b := &replayBatch{seq: seq, envs: envs}
			seq++
			b.left.Store(int32(len(laneIn)))
			for _, c := range laneIn {
				select {
				case c <- b:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// countReplayed counts the batches every lane committed, in sequence
// (they complete in order but may be reported out of it), until done
// closes, and returns the position after the last one in sequence.
func countReplayed(done <-chan *replayBatch, from eventstore.Position, progress func(int)) eventstore.Position {
	finished := map[int]*replayBatch{}
	next := 0
	for b := range done {
		finished[b.seq] = b
		for b, ok := finished[next]; ok; b, ok = finished[next] {
			delete(finished, next)
			next++
			from = b.envs[len(b.envs)-1].Recorded.Position
			progress(len(b.envs))
		}
	}
	return from
}

// decodeParallel decodes a batch in two halves at once; like decode, it
// returns the envelopes before the first undecodable event and its error.
func decodeParallel(evs []eventstore.RecordedEvent) ([]Envelope, error) {
	if len(evs) < 64 {
		return decode("rebuild", evs)
	}
	half := len(evs) / 2
	var second []Envelope
	var secondErr error
	var wg sync.WaitGroup
	wg.Go(func() { second, secondErr = decode("rebuild", evs[half:]) })
	first, err := decode("rebuild", evs[:half])
	wg.Wait()
	if err != nil {
		return first, err
	}
	return append(first, second...), secondErr
}

// errFeedHeldBack: the feed did not show again what it had shown.
var errFeedHeldBack = errors.New("the feed stayed behind a position it showed before")

// retryShort runs f until it reports done, for about a second at most: the
// feed horizon errs low for a moment when a transaction it would pass ends
// while it is computed, so a read may briefly end before a position an
// earlier read showed.
func retryShort(ctx context.Context, f func() (bool, error)) error {
	for range 50 {
		done, err := f()
		if err != nil || done {
			return err
		}
		if !sleep(ctx, 20*time.Millisecond) {
			return ctx.Err()
		}
	}
	return errFeedHeldBack
}

// dataFeed is a Feed that can leave the events' metadata out of a read
// (adapters/postgres EventStore): a replay uses none of it, and it is
// nearly half of the JSON the database formats for the read.
type dataFeed interface {
	ReadAllData(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error)
}

// dataOnlyFeed reads a dataFeed without the metadata.
type dataOnlyFeed struct {
	Feed
	d dataFeed
}

func (f dataOnlyFeed) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	return f.d.ReadAllData(ctx, after, limit)
}

// dataOnly is feed reading without the events' metadata if it can.
func dataOnly(feed Feed) Feed {
	if d, ok := feed.(dataFeed); ok {
		return dataOnlyFeed{Feed: feed, d: d}
	}
	return feed
}

// readUpTo reads the feed after from, cut at *upTo if set.
func readUpTo(ctx context.Context, feed Feed, from eventstore.Position, upTo *eventstore.Position, size int) ([]eventstore.RecordedEvent, error) {
	if upTo != nil && !from.Less(*upTo) {
		return nil, nil
	}
	evs, err := feed.ReadAll(ctx, from, size)
	if err != nil || upTo == nil {
		return evs, err
	}
	cut := len(evs)
	for i, e := range evs {
		if upTo.Less(e.Position) {
			cut = i
			break
		}
	}
	return evs[:cut], nil
}
