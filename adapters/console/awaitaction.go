package console

import (
	"context"
	"time"

	"github.com/onceledger/onceledger/projections/views"
)

// awaitBound is how long an action's answer waits for the read model to
// show it. On an idle server the projector applies an event within
// milliseconds; a server that is behind answers after the bound with a
// notice that the change is being applied, rather than a page whose
// banner stands above the stale row.
const awaitBound = 3 * time.Second

// awaitShown polls shown (the same query the confirming page will run)
// until it reports true, within awaitBound; it reports whether it did. Only
// acting requests wait, so the polls cost nothing on the read path.
func awaitShown(ctx context.Context, shown func(context.Context) bool) bool {
	ctx, cancel := context.WithTimeout(ctx, awaitBound)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !shown(ctx) {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// awaitItem waits until the read model shows the item in status want
// ("open" or "resolved").
func (c *consoleServer) awaitItem(ctx context.Context, ref ItemRef, want string) bool {
	return awaitShown(ctx, func(ctx context.Context) bool {
		found := false
		err := c.cfg.Read.Reconciliation(ctx, views.ReconciliationFilter{StreamID: ref.StreamID, Kind: ref.Kind, Status: want},
			func(it views.ReconciliationItem) error {
				found = found || it.Key == ref.Key
				return nil
			})
		return err == nil && found
	})
}
