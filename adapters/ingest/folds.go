package ingest

import (
	"context"
	"errors"
	"sync"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Folder is a Decider that can keep a stream's history folded between
// decisions. Deciding a delivery on a kept fold costs the events recorded
// since it was kept, not the stream: the lines of one payout (thousands of
// fee rows on one stream) import at a constant cost per line instead of
// re-reading and re-folding the stream for each (docs/settlement.md,
// "Import cost").
type Folder interface {
	Decider
	// Fold returns the empty fold of the stream ev belongs to; nil when
	// the Decider decides ev on its history (a wrapper whose Decide
	// differs from the fold's says so).
	Fold(ev delivery.Event) Fold
}

// Fold is a stream's history folded by a Folder.
type Fold interface {
	// Len is how many of the stream's events the fold holds: the next
	// event to fold is the one of that version.
	Len() int
	// Apply folds recorded events, the next ones of the stream, in order.
	Apply(events []eventstore.RecordedEvent) error
	// Decide returns the events ev adds (as the Folder's Decide on the
	// folded history) and folds them. After an error the fold is undefined:
	// drop it.
	Decide(ev delivery.Event) ([]eventstore.EventData, error)
}

// TailReader is a unit of work that can read a stream from a version on:
// a kept fold needs only the events appended since.
type TailReader interface {
	ReadStreamFrom(ctx context.Context, stream string, from int) ([]eventstore.RecordedEvent, error)
}

// Fold limits: a stream shorter than foldKeepMin events is folded again
// cheaply (most payment streams hold a handful); at most foldKeepMax folds
// are kept, so memory is bounded by the few long streams an import touches
// (its payouts).
const (
	foldKeepMin = 32
	foldKeepMax = 256
)

// folds keeps the folds of long streams between units of work. A fold is
// taken out while a unit decides on it and put back only once what it
// decided is durable; a unit that fails drops it, so a kept fold is always
// a prefix of its stream (events are never rewritten).
type folds struct {
	mu sync.Mutex
	m  map[string]Fold
}

// take removes and returns stream's kept fold; nil when none is kept.
func (c *folds) take(stream string) Fold {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.m[stream]
	delete(c.m, stream)
	return f
}

// tails reports whether a unit on tx deciding on stream will read only
// its tail (a fold is kept and tx can read from a version): the gate then
// need not read the stream.
func (c *folds) tails(tx Tx, stream string) bool {
	if _, ok := tx.(TailReader); !ok || c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[stream]
	return ok
}

// keep keeps f, the fold of stream as durable now, if it is worth keeping.
func (c *folds) keep(stream string, f Fold) {
	if c == nil || f == nil || f.Len() < foldKeepMin {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]Fold)
	}
	if _, ok := c.m[stream]; !ok && len(c.m) >= foldKeepMax {
		for k := range c.m { // any one: the map's order is as good as an LRU here
			delete(c.m, k)
			break
		}
	}
	c.m[stream] = f
}

// How foldedAct went.
type foldHow int

const (
	folded       foldHow = iota // decided on a fold and appended (or failed: err)
	notFolded                   // the Decider keeps no fold for ev: decide on its history
	foldLostRace                // the append lost the race (err): decide again on the stream
)

// foldedAct records ev's decision on its stream through a fold (the one
// kept, or one made from the gate's read, or from a read): fold, decide,
// append at the fold's version. On success the fold, holding the decision,
// is pending for the unit's commit (withPending).
func (s *Service) foldedAct(ctx context.Context, tx Tx, ev delivery.Event, gated *Gated) (int, foldHow, error) {
	folder, ok := s.dec.(Folder)
	if !ok {
		return 0, notFolded, nil
	}
	stream := ev.StreamID()
	f := s.folds.take(stream)
	var tail []eventstore.RecordedEvent
	var err error
	tr, canTail := tx.(TailReader)
	switch {
	case f != nil && canTail:
		tail, err = tr.ReadStreamFrom(ctx, stream, f.Len())
	case gated != nil:
		f, tail = folder.Fold(ev), gated.History
	default:
		if f = folder.Fold(ev); f != nil {
			tail, err = tx.ReadStream(ctx, stream)
		}
	}
	if f == nil {
		return 0, notFolded, nil
	}
	if err != nil {
		return 0, folded, err
	}
	if err := f.Apply(tail); err != nil {
		return 0, folded, err
	}
	read := f.Len()
	decided, err := f.Decide(ev)
	if err != nil {
		return 0, folded, err
	}
	if len(decided) > 0 {
		if err := tx.Append(ctx, stream, read, decided); err != nil {
			if errors.Is(err, eventstore.ErrWrongVersion) {
				return 0, foldLostRace, err
			}
			return 0, folded, err
		}
	}
	if p, _ := ctx.Value(pendingKey{}).(*pendingFolds); p != nil {
		p.add(stream, f)
	}
	return len(decided), folded, nil
}

// pendingFolds are the folds a unit of work made, kept once it committed
// (a fold kept before could hold events a rollback undid).
type pendingFolds struct {
	streams []string
	folds   []Fold
}

type pendingKey struct{}

func (p *pendingFolds) add(stream string, f Fold) {
	p.streams = append(p.streams, stream)
	p.folds = append(p.folds, f)
}

// withPending returns ctx carrying a unit's pending folds.
func withPending(ctx context.Context) (context.Context, *pendingFolds) {
	p := &pendingFolds{}
	return context.WithValue(ctx, pendingKey{}, p), p
}

// keepAll keeps the folds of a committed unit.
func (c *folds) keepAll(p *pendingFolds) {
	for i, st := range p.streams {
		c.keep(st, p.folds[i])
	}
}
