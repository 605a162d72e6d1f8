package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// IngestBatch records many deliveries submitted at once (the lines of a
// settlement report) as one set: on a journal that can (BatchJournal), ONE
// unit of work gates all of them with one multi-row inbox insert, reads all
// their streams in one query, decides each delivery in memory on its
// stream's history plus what the batch's earlier deliveries of that stream
// decided, and appends every stream's events in one multi-row insert. The
// statements per batch are constant, whatever its size: a report line costs
// its rows, not its round trips (issue #12's import rate).
//
// Each delivery's outcome is what Ingest would have answered. A delivery
// that cannot be settled in the set is recorded alone afterwards by the
// single path, without failing the others:
//   - a key repeated inside the batch (its first occurrence joins the set;
//     the repeat, after the commit, is its duplicate);
//   - a redelivery of a key on record that is not a plain duplicate (a
//     conflict to keep, a row still "received" to drive);
//   - a delivery whose decision fails (alone, it fails by itself, named);
//   - the deliveries of a stream another writer moved since the read (a
//     webhook racing the import): withdrawn from the set, decided again.
//
// A set that fails as a whole (a deadlock with a concurrent writer, a lost
// connection) is rolled back and its deliveries are recorded one by one.
//
// On a journal that cannot share a unit (two-phase: EventStoreDB), the
// deliveries are ingested one by one.
//
// On error the results hold what was recorded (Outcome "" for the rest) and
// the error is a *BatchError naming the delivery that failed.
func (s *Service) IngestBatch(ctx context.Context, evs []delivery.Event) ([]Result, error) {
	for i, ev := range evs {
		if err := ev.Validate(); err != nil {
			return make([]Result, len(evs)), &BatchError{At: i, Err: err}
		}
	}
	out := make([]Result, len(evs))
	var alone []int
	unitErr := errNoUnit
	if bj, ok := s.journal.(BatchJournal); ok && s.journal.Atomic() && len(evs) > 1 {
		unitErr = bj.DoBatch(ctx, func(tx BatchTx) (err error) {
			alone, err = s.importUnit(ctx, tx, evs, out)
			return err
		})
	}
	if unitErr != nil {
		// No set, or one rolled back as a whole: nothing of it was kept.
		clear(out)
		alone = make([]int, len(evs))
		for i := range alone {
			alone[i] = i
		}
	}
	for _, i := range alone {
		res, err := s.Ingest(ctx, evs[i])
		if err != nil {
			return out, &BatchError{At: i, Err: err}
		}
		out[i] = res
	}
	return out, nil
}

// errNoUnit: the journal cannot share a unit of work (or there is one
// delivery): IngestBatch records the deliveries one by one.
var errNoUnit = errors.New("no shared unit")

// BatchError: IngestBatch could not record evs[At].
type BatchError struct {
	At  int
	Err error
}

func (e *BatchError) Error() string { return fmt.Sprintf("delivery %d of the batch: %v", e.At, e.Err) }
func (e *BatchError) Unwrap() error { return e.Err }

// setStream is one stream's part of an import set: the history read at the
// gate, extended in memory by the events the set's deliveries decided.
type setStream struct {
	read    int // events read at the gate: the append's expected version
	history []eventstore.RecordedEvent
	events  []eventstore.EventData // decided in the set, in order
	members []int                  // deliveries of the set on this stream
}

// importUnit is IngestBatch's record algorithm inside one shared unit. It
// fills out for the deliveries the unit records and returns the indexes of
// those to record alone after the commit.
func (s *Service) importUnit(ctx context.Context, tx BatchTx, evs []delivery.Event, out []Result) ([]int, error) {
	var alone, joined []int
	seen := make(map[InboxKey]bool, len(evs))
	items := make([]GateItem, 0, len(evs))
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
		}
		items = append(items, it)
	}
	gated, err := tx.GateAll(ctx, items)
	if err != nil {
		return nil, err
	}
	if len(gated) != len(items) {
		return nil, fmt.Errorf("import gate: %d answers for %d deliveries", len(gated), len(items))
	}
	streams := make(map[string]*setStream)
	var order []string // streams in first-decided order
	var withdraw []int
	for n, i := range joined {
		ev := evs[i]
		g := gated[n]
		switch {
		case !g.Inserted:
			res, stream := Redelivery(g.First, ev)
			if g.First.Status == "" || g.First.Status == StatusReceived || stream != "" || res.Conflict {
				alone = append(alone, i)
				continue
			}
			out[i] = res // counted by the gate
		case ev.Ignored():
			out[i] = Result{Outcome: Ignored}
		default:
			id := ev.StreamID()
			st := streams[id]
			if st == nil {
				st = &setStream{read: len(g.History), history: g.History}
				streams[id] = st
				order = append(order, id)
			}
			st.members = append(st.members, i)
			decided, err := s.dec.Decide(st.history, ev)
			if err != nil {
				withdraw = append(withdraw, i) // alone, it fails by itself
				continue
			}
			for _, e := range decided {
				st.history = append(st.history, eventstore.RecordedEvent{ID: e.ID, StreamID: id,
					Version: uint64(st.read + len(st.events)), Type: e.Type, Data: e.Data, Metadata: e.Metadata})
				st.events = append(st.events, e)
			}
			out[i] = Result{Outcome: Accepted, StreamID: id, Appended: len(decided)}
		}
	}
	var appends []BatchAppend
	var appended []*setStream
	for _, id := range order {
		if st := streams[id]; len(st.events) > 0 {
			appends = append(appends, BatchAppend{Stream: id, Read: st.read, Events: st.events})
			appended = append(appended, st)
		}
	}
	if len(appends) > 0 {
		rejected, err := tx.AppendAll(ctx, appends)
		if err != nil {
			return nil, err
		}
		for _, r := range rejected {
			if r < 0 || r >= len(appended) {
				return nil, fmt.Errorf("import append: rejected index %d of %d", r, len(appended))
			}
			// The stream moved: every delivery of it decides again alone
			// (a member whose decision failed is in withdraw already).
			withdraw = append(withdraw, appended[r].members...)
		}
	}
	if len(withdraw) > 0 {
		slices.Sort(withdraw)
		withdraw = slices.Compact(withdraw)
		keys := make([]InboxKey, len(withdraw))
		for n, i := range withdraw {
			keys[n] = InboxKey{evs[i].Provider, evs[i].DedupKey}
			out[i] = Result{}
		}
		if err := tx.Withdraw(ctx, keys); err != nil {
			return nil, err
		}
		alone = append(alone, withdraw...)
	}
	slices.Sort(alone)
	return alone, nil
}
