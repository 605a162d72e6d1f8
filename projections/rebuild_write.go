package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// lane is one writer of a replay: a projection, or one stream partition of
// a stream-local projection. Each lane applies the batches in feed order in
// its own transactions; lanes run side by side. A lane is the replay's
// write side: the pipeline (rebuild_replay.go) hands it every batch and
// waits for it to commit them (lane.write); how it writes is its own.
type lane struct {
	proj        Projection
	part, parts int
	hold        *paymentHold // the payments projection's lanes: rows held in memory
	copies      bool         // the ledger's lane: entries loaded by an entryCopier
	copier      *entryCopier // while a replay runs
	totals      *entryTotals // the ledger's lane: its entries added up, across replays
	// sums: the ledger's lane in a checksum pass: its entries' checksums
	// (not stored), across replays; periods: their sums per period, for
	// the closes.
	sums    TableSums
	periods *periodTotals
	busy    time.Duration
}

func (l *lane) name() string {
	if l.parts == 1 {
		return l.proj.Name()
	}
	return fmt.Sprintf("%s/%d", l.proj.Name(), l.part)
}

// streamLocal is implemented by projections whose every row depends on
// the events of one stream only, in stream order: a rebuild may replay them
// partitioned by stream (the ledger is not: its period booking depends on
// the global order of the calendar events).
type streamLocal interface {
	// partitions is how many lanes a rebuild gives the projection.
	partitions() int
}

// lanesOf returns the lanes of a rebuild; they keep state (held rows)
// from one replay to the next. In a checksum pass the ledger's lane hashes
// its entries instead of loading them.
func lanesOf(projs []Projection, checksums bool) []*lane {
	var out []*lane
	for _, p := range projs {
		n := 1
		if s, ok := p.(streamLocal); ok {
			n = max(1, s.partitions())
		}
		for i := range n {
			l := &lane{proj: p, part: i, parts: n}
			switch p.(type) {
			case paymentsProjection:
				l.hold = newPaymentHold()
			case ledgerProjection:
				l.copies = true
				l.totals = newEntryTotals()
				if checksums {
					l.sums = TableSums{}
					l.periods = newPeriodTotals()
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// write applies the batches of one replay from in, each in one
// transaction, and sends each on done once every lane has committed it.
// What the lane still holds goes in before the replay ends.
func (l *lane) write(ctx context.Context, db ShadowDB, in <-chan *replayBatch, done chan<- *replayBatch) (err error) {
	if l.copies {
		l.copier = startEntryCopier(ctx, db, l.totals, l.sums, l.periods)
		defer func() {
			if cerr := l.copier.stop(l.sums); err == nil {
				err = cerr
			}
			l.copier = nil
		}()
	}
	for b := range in {
		t := time.Now()
		err := l.apply(ctx, db, b.envs)
		l.busy += time.Since(t)
		if err != nil {
			return err
		}
		if b.left.Add(-1) == 0 {
			select {
			case done <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return l.release(ctx, db)
}

// events returns the lane's share of a batch.
func (l *lane) events(envs []Envelope) []Envelope {
	if l.parts == 1 {
		return envs
	}
	out := make([]Envelope, 0, len(envs)/l.parts+len(envs)/8)
	for _, e := range envs {
		if int(streamHash(e.Recorded.StreamID)%uint32(l.parts)) == l.part {
			out = append(out, e)
		}
	}
	return out
}

// streamHash is FNV-1a of s, inline: hash/fnv allocates a hasher and a
// copy of s, per event and lane.
func streamHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// apply writes the lane's share of a batch in one transaction.
func (l *lane) apply(ctx context.Context, db ShadowDB, envs []Envelope) (err error) {
	envs = l.events(envs)
	if len(envs) == 0 {
		return nil
	}
	b, err := db.BeginShadow(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = b.Rollback(context.WithoutCancel(ctx))
		}
	}()
	var w Writer = b
	switch {
	case l.hold != nil:
		w = holdingWriter{Batch: b, h: l.hold}
	case l.copier != nil:
		w = copyingWriter{Batch: b, c: l.copier}
	}
	if err := safeApply(ctx, l.proj, w, envs); err != nil {
		return poisonAt(l.proj.Name(), envs, err)
	}
	if l.hold != nil {
		l.hold.batch++
		if err := l.hold.release(ctx, b, false); err != nil {
			return err
		}
	}
	return b.Commit(ctx, envs[len(envs)-1].Recorded.Position)
}

// release writes every row the lane holds, in one transaction.
func (l *lane) release(ctx context.Context, db ShadowDB) (err error) {
	if l.hold == nil || len(l.hold.rows) == 0 {
		return nil
	}
	b, err := db.BeginShadow(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = b.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := l.hold.release(ctx, b, true); err != nil {
		return err
	}
	return b.Commit(ctx, eventstore.Position{})
}

// finishBulk fills the shadows' derived tables once the stored replay has
// loaded the rest: the balances the ledger's lane added up, if it could.
func (r *rebuild) finishBulk(ctx context.Context) error {
	if err := r.db.FinishBulk(ctx, r.tables, balanceTotals(r.lanes)); err != nil {
		return fmt.Errorf("finish bulk load: %w", err)
	}
	r.phase("balances")
	return nil
}

// balanceTotals returns the balances the ledger's lane added up, nil if
// none did (or they overflowed).
func balanceTotals(lanes []*lane) []BalanceTotal {
	for _, l := range lanes {
		if l.totals != nil {
			return l.totals.balances()
		}
	}
	return nil
}
