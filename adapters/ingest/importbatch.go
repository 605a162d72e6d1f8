package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceledger/onceledger/domain/delivery"
)

// IngestBatch records many deliveries submitted at once (the lines of a
// settlement report) as one set: on a journal that can (BatchJournal), ONE
// shared unit of work (sharedUnit, shared.go) gates all of them with one
// multi-row inbox insert, reads all their streams in one query, decides
// each delivery in memory on its stream's history plus what the batch's
// earlier deliveries of that stream decided, and appends every stream's
// events in one multi-row insert. The
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
	var pending *pendingFolds
	if bj, ok := s.journal.(BatchJournal); ok && s.journal.Atomic() && len(evs) > 1 {
		// The set's streams are decided on their kept folds (folds.go),
		// kept again once the set committed: a payout's lines cost the
		// same, the thousandth as the first.
		var uctx context.Context
		uctx, pending = withPending(ctx)
		unitErr = bj.DoBatch(ctx, func(tx BatchTx) error {
			res, a, err := s.sharedUnit(uctx, tx, unitMembers{evs: evs}, "import", nil)
			if err != nil {
				return err
			}
			copy(out, res)
			alone = a
			return nil
		})
	}
	if unitErr == nil {
		s.folds.keepAll(pending)
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
