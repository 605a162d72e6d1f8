package ingest

import (
	"context"

	"github.com/onceledger/onceledger/domain/delivery"
)

// IngestBatch records several first arrivals in ONE unit of work, for
// imports that submit many deliveries at once (settlement reports): on an
// atomic journal (Postgres) they share one transaction, so one commit (one
// WAL flush) serves the batch instead of one per delivery. Each delivery
// goes through the same record algorithm as Ingest (gate, decide, append),
// so the outcome of each is what Ingest would have answered. A lost race
// rolls the whole batch back and the batch is run again; any other failure
// rolls it back and is returned (nothing of the batch is recorded), and the
// caller may fall back to Ingest one by one to isolate the bad delivery. A
// journal that is not atomic gains nothing from a batch: the deliveries are
// ingested one by one.
//
// The caller should keep the deliveries of one stream in one batch at a
// time (route by StreamID): two batches taking the same streams in another
// order in concurrent transactions could deadlock.
func (s *Service) IngestBatch(ctx context.Context, evs []delivery.Event) ([]Result, error) {
	for _, ev := range evs {
		if err := ev.Validate(); err != nil {
			return nil, err
		}
	}
	if !s.journal.Atomic() || len(evs) == 1 {
		out := make([]Result, 0, len(evs))
		for _, ev := range evs {
			res, err := s.Ingest(ctx, ev)
			if err != nil {
				return out, err
			}
			out = append(out, res)
		}
		return out, nil
	}
	var out []Result
	_, err := s.retry(ctx, evs[0].Provider, "batch of "+evs[0].DedupKey, func() (Result, error) {
		out = make([]Result, 0, len(evs))
		err := s.journal.Do(ctx, func(tx Tx) error {
			for _, ev := range evs {
				res, err := s.recordOnce(ctx, tx, ev, false)
				if err != nil {
					return err
				}
				out = append(out, res)
			}
			return nil
		})
		return Result{}, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
