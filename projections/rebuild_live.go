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
// brings the shadows there first. A projection that never started (its
// checkpoint at the start of the feed, its live tables empty) is left
// there (see emptyLive), its tables recorded in r.unstarted.
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
	r.unstarted = map[string]bool{}
	for _, p := range r.projs {
		if !live[p.Name()].Less(target) {
			continue
		}
		if live[p.Name()] == eventstore.Start {
			empty, err := r.emptyLive(ctx, p)
			if err != nil {
				return target, err
			}
			if empty {
				for _, t := range p.Tables() {
					r.unstarted[t] = true
				}
				continue
			}
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
// rows at all (no page on disk: from the catalog, no scan). A projection
// that never started (checkpoint at the start of the feed) with empty
// tables is not brought to the rebuild's position through the live path,
// which writes row by row: a new projection, or every projection of a
// database restored without its read models, would replay the whole feed
// that way while the projectors are paused. Empty is what its tables must
// be at the start, so they are not wrong, only behind: the comparison
// reports no difference for them (unstarted), and the swap replaces them
// by their shadows and sets the checkpoint to the rebuild's position. (A
// projection past the start with empty tables is brought along as
// before: history may say they should not be empty.)
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

// behindOnly takes the tables of projections that never started out of
// the comparison's differences: their live tables are right for the start
// of the feed (empty), and are only behind.
func (r *rebuild) behindOnly() {
	if len(r.unstarted) == 0 {
		return
	}
	diffs := r.rep.Differences[:0]
	for _, d := range r.rep.Differences {
		if !r.unstarted[d.Table] {
			diffs = append(diffs, d)
		}
	}
	r.rep.Differences = diffs
	for i, c := range r.rep.Tables {
		if r.unstarted[c.Table] {
			r.rep.Tables[i].DifferingRows, r.rep.Tables[i].DifferingGroups = 0, nil
		}
	}
}
