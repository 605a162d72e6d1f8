package postgres

import (
	"context"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// CountFeed counts the feed's events after after, up to and including
// upTo (a position the feed returned or its Head: every event up to it is
// below the horizon), at most limit of them (0: all), and returns the
// recording time of the first of them; capped says there were more than
// limit. It implements projections.FeedCounter: the projections' status
// counted each projection's lag by reading the events (up to 100,000 of
// them, jsonb and all) on every reading of /v1/projections and of the
// metrics, so that a projection behind made each poll of its lag cost as
// much as catching up. The count is a scan of the feed's index.
func (s *EventStore) CountFeed(ctx context.Context, after, upTo eventstore.Position, limit int64) (n int64, oldest time.Time, capped bool, err error) {
	if !after.Less(upTo) {
		return 0, time.Time{}, false, nil
	}
	ac, ap := clampPosition(after)
	uc, up := clampPosition(upTo)
	var lim *int64
	if limit > 0 {
		l := limit + 1 // one more: whether there are more than limit
		lim = &l
	}
	var first *time.Time
	err = s.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM (
		          SELECT 1 FROM events
		          WHERE (tx_id, global_position) > ($1, $2) AND (tx_id, global_position) <= ($3, $4)
		          ORDER BY tx_id, global_position LIMIT $5) x),
		       (SELECT recorded_at FROM events
		        WHERE (tx_id, global_position) > ($1, $2) AND (tx_id, global_position) <= ($3, $4)
		        ORDER BY tx_id, global_position LIMIT 1)`, ac, ap, uc, up, lim).Scan(&n, &first)
	if err != nil {
		return 0, time.Time{}, false, wrap("count the feed", err)
	}
	if limit > 0 && n > limit {
		n, capped = limit, true
	}
	if first != nil {
		oldest = *first
	}
	return n, oldest, capped, nil
}
