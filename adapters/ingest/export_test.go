package ingest

import (
	"context"

	"github.com/onceledger/onceledger/domain/delivery"
)

// RaceBudget exposes raceBudget to the external tests.
const RaceBudget = raceBudget

// IngestBatch records evs as ONE shared unit (as if they had queued
// together), then records the members the unit left alone by the single
// path, as Ingest does. alone[i] says which went alone.
func IngestBatch(ctx context.Context, s *Service, evs []delivery.Event) (res []Result, alone []bool, errs []error) {
	batch := make([]*member, len(evs))
	for i, ev := range evs {
		batch[i] = &member{ctx: ctx, ev: ev, done: make(chan outcome, 1)}
	}
	s.batch.run(batch)
	res, alone, errs = make([]Result, len(evs)), make([]bool, len(evs)), make([]error, len(evs))
	for i, m := range batch {
		o := <-m.done
		res[i], alone[i], errs[i] = o.res, o.alone, o.err
		if o.alone {
			res[i], errs[i] = s.recordAlone(ctx, m.ev, false)
		}
	}
	return res, alone, errs
}

// Waiting is how many deliveries wait behind the batches in flight: queued
// for a unit of their own, or attached as twins to a member of one.
func Waiting(s *Service) int {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	n := len(s.batch.queue)
	for _, m := range s.batch.busyKeys {
		n += len(m.twins)
	}
	return n
}
