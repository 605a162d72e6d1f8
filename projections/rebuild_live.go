package projections

import (
	"context"
	"fmt"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// pause holds off the live projectors: the exclusive pause locks wait for
// the live batch in flight and hold off the next ones. resume lets them go
// on; calling it again does nothing. On an error the locks taken are
// released already, and resume is still safe to call (Rebuild defers the
// one of a second pause).
func (r *rebuild) pause(ctx context.Context) (resume func(), err error) {
	bg := context.WithoutCancel(ctx)
	var locks []Lock
	resume = func() {
		for _, l := range locks {
			_ = l.Release(bg)
		}
		locks = nil
	}
	for _, p := range r.projs {
		l, err := r.db.Lock(ctx, LockPause, p.Name())
		if err != nil {
			resume()
			return resume, fmt.Errorf("pause %s: %w", p.Name(), err)
		}
		locks = append(locks, l)
	}
	return resume, nil
}

// alignLive brings the paused live projections to one position, the
// furthest of floor and their checkpoints, and returns it; shadow, if set,
// brings the shadows there first. A projection whose live tables are empty
// is left at its checkpoint (see emptyLive).
func (r *rebuild) alignLive(ctx context.Context, floor eventstore.Position, shadow func(target eventstore.Position) error) (eventstore.Position, error) {
	target := floor
	live := map[string]eventstore.Position{}
	for _, p := range r.projs {
		cp, err := r.db.Checkpoint(ctx, p.Name())
		if err != nil {
			return target, err
		}
		live[p.Name()] = cp.Position
		if target.Less(cp.Position) {
			target = cp.Position
		}
	}
	if shadow != nil {
		if err := shadow(target); err != nil {
			return target, err
		}
	}
	for _, p := range r.projs {
		if !live[p.Name()].Less(target) {
			continue
		}
		empty, err := r.emptyLive(ctx, p)
		if err != nil {
			return target, err
		}
		if empty {
			continue
		}
		if err := advanceLive(ctx, r.feed, r.db, p, live[p.Name()], target); err != nil {
			return target, fmt.Errorf("bring live %s to %s: %w", p.Name(), target, err)
		}
	}
	return target, nil
}

// alignShadows brings the shadows of the stored replay and the paused
// live tables to one position, the report's.
func (r *rebuild) alignShadows(ctx context.Context) error {
	target, err := r.alignLive(ctx, r.shadowAt, func(target eventstore.Position) error {
		return r.replayTo(ctx, r.lanes, target)
	})
	if err != nil {
		return err
	}
	r.rep.Position = target
	return nil
}

// advanceLive applies the feed from the live checkpoint up to target to a
// paused projection (its projector would have; it cannot while paused).
func advanceLive(ctx context.Context, feed Feed, db RuntimeDB, p Projection, from, target eventstore.Position) error {
	for from.Less(target) {
		evs, err := readUpTo(ctx, feed, from, &target, liveBatchSize)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			// The feed showed target before; it may hold back for a moment
			// (a read-model transaction that ends while the horizon is
			// computed errs low), never for good.
			if err := retryShort(ctx, func() (bool, error) {
				evs, err = readUpTo(ctx, feed, from, &target, liveBatchSize)
				return len(evs) > 0, err
			}); err != nil {
				return fmt.Errorf("feed ends at %s, before %s: %w", from, target, err)
			}
		}
		n, err := applyLive(ctx, db, p, from, evs, false)
		if err != nil {
			return err
		}
		from = evs[n-1].Position
	}
	return nil
}

// emptyLive tells whether the paused projection p's live tables have no
// rows at all (no page on disk: from the catalog, no scan). Such a
// projection is not brought to the rebuild's position through the live
// path, which writes row by row: a new projection, or any projection of a
// restored database, would replay the whole feed that way while the
// projectors are paused. Its tables are compared as they are, empty at its
// checkpoint: equal to the shadows only if those are empty too (then the
// live projector goes on from its checkpoint as before, and finds nothing
// history does not), otherwise every rebuilt row is missing from them and
// the swap replaces them and sets the checkpoint to the rebuild's position.
func (r *rebuild) emptyLive(ctx context.Context, p Projection) (bool, error) {
	sizes, err := r.db.TableSizes(ctx, p.Tables())
	if err != nil {
		return false, err
	}
	for _, s := range sizes {
		if s.Live > 0 {
			return false, nil
		}
	}
	return true, nil
}
