package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// sharedUnit is the record algorithm of one shared unit of work, for
// concurrent first arrivals (group commit, batch.go) and for the lines of
// a report (an import set, importbatch.go) alike:
//
//  1. gate: one multi-row inbox insert of the set's distinct keys and one
//     read of all the streams of the rows it inserted;
//  2. decide each delivery in memory, on its stream's history plus what
//     the set's earlier deliveries of that stream decided;
//  3. append every stream's events in one multi-row insert, each at the
//     version its history was read at;
//  4. withdraw the inbox rows of the deliveries the unit could not record.
//
// It fills the result of each delivery the unit records and returns, in
// order, the indexes of the others, for the single path after the commit:
// a key repeated in the set (a duplicate of its first occurrence, once that
// is committed), a redelivery that is not a plain duplicate (sharedAnswer),
// a delivery whose decision fails (alone, it fails by itself, named), and
// the deliveries of a stream another writer moved since the read.
//
// released, if set, is told of each redelivery the gate sends alone, as
// soon as the gate answered: nothing of it was written in the unit, so the
// single path may take it without waiting for the commit. what names the
// unit in its errors.
func (s *Service) sharedUnit(ctx context.Context, tx BatchTx, m unitMembers, what string, released func(i int)) ([]Result, []int, error) {
	evs := m.evs
	out := make([]Result, len(evs))
	var alone, joined []int
	seen := make(map[InboxKey]bool, len(evs))
	items := make([]GateItem, 0, len(evs))
	set := newSharedSet(s.dec)
	for i, ev := range evs {
		k := InboxKey{ev.Provider, ev.DedupKey}
		if seen[k] {
			alone = append(alone, i) // after the commit: a duplicate of the first
			continue
		}
		seen[k] = true
		joined = append(joined, i)
		it := GateItem{Event: ev, Status: StatusApplied, Read: ev.StreamID()}
		if ev.Ignored() {
			it = GateItem{Event: ev, Status: StatusIgnored}
		} else {
			it.From = set.kept(s.folds, it.Read)
		}
		if m.facts != nil {
			it.Facts = m.facts[i]
		}
		if m.twins != nil {
			it.Twins = m.twins[i]
		}
		items = append(items, it)
	}
	gated, err := tx.GateAll(ctx, items)
	if err != nil {
		return nil, nil, err
	}
	if len(gated) != len(items) {
		return nil, nil, fmt.Errorf("%s gate: %d answers for %d deliveries", what, len(gated), len(items))
	}
	var redelivered []int
	for n, i := range joined {
		ev, g := evs[i], gated[n]
		switch {
		case !g.Inserted:
			res, ok := sharedAnswer(g.First, ev)
			if !ok {
				redelivered = append(redelivered, i)
				continue
			}
			out[i] = res // counted by the gate
		case ev.Ignored():
			out[i] = Result{Outcome: Ignored}
		default:
			added, err := set.decide(i, ev, g.History)
			if err != nil {
				set.withdraw = append(set.withdraw, i) // alone, it fails by itself
				continue
			}
			out[i] = Result{Outcome: Accepted, StreamID: ev.StreamID(), Appended: added}
		}
	}
	if released != nil {
		for _, i := range redelivered {
			released(i)
		}
	}
	alone = append(alone, redelivered...)
	if err := set.appendAll(ctx, tx, what); err != nil {
		return nil, nil, err
	}
	if p, _ := ctx.Value(pendingKey{}).(*pendingFolds); p != nil {
		set.pending(p)
	}
	if withdraw := set.withdrawn(); len(withdraw) > 0 {
		keys := make([]InboxKey, len(withdraw))
		for n, i := range withdraw {
			keys[n] = InboxKey{evs[i].Provider, evs[i].DedupKey}
			out[i] = Result{}
		}
		if err := tx.Withdraw(ctx, keys); err != nil {
			return nil, nil, err
		}
		alone = append(alone, withdraw...)
	}
	slices.Sort(alone)
	return out, alone, nil
}

// unitMembers are the deliveries of a shared unit, with what the caller
// knows of them already: facts[i] is evs[i]'s facts hash ("" or a nil
// slice: the journal computes it) and twins[i] the arrivals of its key to
// count with it (GateItem.Twins; nil: none).
type unitMembers struct {
	evs   []delivery.Event
	facts []string
	twins []int
}

// sharedAnswer is the answer a shared unit gives a redelivery of a key on
// record (first): a plain duplicate (same facts, its first arrival
// recorded) is answered in the unit, ok; any other is recorded alone (a
// conflict to keep, a row still "received" to drive, a row the gate did
// not count).
func sharedAnswer(first Stored, ev delivery.Event) (Result, bool) {
	res, stream := Redelivery(first, ev)
	if first.Status == "" || first.Status == StatusReceived || stream != "" || res.Conflict {
		return Result{}, false
	}
	return res, true
}

// sharedSet is what a shared unit decided, by stream.
type sharedSet struct {
	dec      Decider
	streams  map[string]*setStream
	order    []string // streams in first-decided order
	withdraw []int    // deliveries to withdraw from the unit
	folds    map[string]Fold
}

// setStream is one stream's part of a shared unit: its fold (a Folder's) or
// the history read at the gate, extended in memory by the events the
// unit's deliveries decided.
type setStream struct {
	read     int  // events before the unit's: the append's expected version
	fold     Fold // the stream folded, with the unit's decisions; nil: history
	rejected bool // its append was rejected: the stream moved
	broken   bool // a decision failed: the fold is undefined, later members go alone
	history  []eventstore.RecordedEvent
	events   []eventstore.EventData // decided in the unit, in order
	members  []int                  // deliveries of the unit on this stream
}

func newSharedSet(dec Decider) *sharedSet {
	return &sharedSet{dec: dec, streams: make(map[string]*setStream), folds: make(map[string]Fold)}
}

// kept takes stream's kept fold out of c for the unit, once per stream,
// and returns the version the gate reads the stream from.
func (u *sharedSet) kept(c *folds, stream string) int {
	if _, ok := u.dec.(Folder); !ok {
		return 0
	}
	f, ok := u.folds[stream]
	if !ok {
		f = c.take(stream)
		u.folds[stream] = f
	}
	if f == nil {
		return 0
	}
	return f.Len()
}

// decide decides delivery i on its stream's state in the unit (read, the
// gate's read from the stream's kept fold on, for its first delivery) and
// returns how many events it added.
func (u *sharedSet) decide(i int, ev delivery.Event, read []eventstore.RecordedEvent) (int, error) {
	id := ev.StreamID()
	st := u.streams[id]
	if st == nil {
		st = u.open(ev, read)
	}
	if st.broken {
		return 0, errBrokenFold
	}
	st.members = append(st.members, i)
	var decided []eventstore.EventData
	var err error
	if st.fold != nil {
		if decided, err = st.fold.Decide(ev); err != nil {
			st.broken = true
		}
	} else {
		decided, err = u.dec.Decide(st.history, ev)
	}
	if err != nil {
		return 0, err
	}
	for _, e := range decided {
		if st.fold == nil {
			st.history = append(st.history, eventstore.RecordedEvent{ID: e.ID, StreamID: id,
				Version: uint64(st.read + len(st.events)), Type: e.Type, Data: e.Data, Metadata: e.Metadata})
		}
		st.events = append(st.events, e)
	}
	return len(decided), nil
}

// open starts stream ev's part of the unit on read, the events the gate read.
func (u *sharedSet) open(ev delivery.Event, read []eventstore.RecordedEvent) *setStream {
	id := ev.StreamID()
	st := &setStream{read: len(read), history: read}
	f := u.folds[id]
	if folder, ok := u.dec.(Folder); ok && f == nil {
		f = folder.Fold(ev)
	}
	if f != nil {
		st.fold, st.history = f, nil
		if err := f.Apply(read); err != nil {
			st.broken = true // every member alone: each fails by itself
		}
		st.read = f.Len()
	}
	u.streams[id] = st
	u.order = append(u.order, id)
	return st
}

// errBrokenFold: an earlier decision of the unit on the stream failed; the
// delivery is decided alone, after the unit.
var errBrokenFold = errors.New("stream's decision failed earlier in the unit")

// pending hands the folds of the streams the unit recorded to p, to keep
// after the commit.
func (u *sharedSet) pending(p *pendingFolds) {
	for id, f := range u.folds {
		st := u.streams[id]
		switch {
		case st == nil && f != nil:
			p.add(id, f) // nothing decided on it: as it was taken
		case st != nil && st.fold != nil && !st.broken && !st.rejected:
			p.add(id, st.fold)
		}
	}
}

// appendAll appends every stream's events at once; a stream that moved
// since the read has all its deliveries withdrawn, to decide again alone.
func (u *sharedSet) appendAll(ctx context.Context, tx BatchTx, what string) error {
	var appends []BatchAppend
	var appended []*setStream
	for _, id := range u.order {
		if st := u.streams[id]; len(st.events) > 0 {
			appends = append(appends, BatchAppend{Stream: id, Read: st.read, Events: st.events})
			appended = append(appended, st)
		}
	}
	if len(appends) == 0 {
		return nil
	}
	rejected, err := tx.AppendAll(ctx, appends)
	if err != nil {
		return err
	}
	for _, r := range rejected {
		if r < 0 || r >= len(appended) {
			return fmt.Errorf("%s append: rejected index %d of %d", what, r, len(appended))
		}
		// A member whose decision failed is in withdraw already.
		u.withdraw = append(u.withdraw, appended[r].members...)
		appended[r].rejected = true
	}
	return nil
}

// withdrawn is the sorted, distinct deliveries to withdraw.
func (u *sharedSet) withdrawn() []int {
	slices.Sort(u.withdraw)
	return slices.Compact(u.withdraw)
}
