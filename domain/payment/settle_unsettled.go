package payment

import (
	"fmt"
	"sort"
	"time"

	"github.com/onceledger/onceledger/domain/settlement"
)

// Unsettled returns the unsettled items one payment stream should open now:
// one per capture recorded at or before asOf − after (its OccurredAt) that
// no settlement line has settled and that has no unsettled item yet, in
// capture id order. The import wiring calls it, after a report was imported,
// for the payments of that provider with captures older than the cutoff
// (ONCELEDGER_UNSETTLED_AFTER), and appends the result like a decision with
// meta (Provider and PaymentKey of the stream, DedupKey naming the import,
// e.g. "unsettled:<import id>", OccurredAt asOf). Pure: the clock is asOf.
//
// A settlement line for the capture that arrives later clears the item
// (settle.go).
func Unsettled(history []Event, meta Meta, asOf time.Time, after time.Duration) []Event {
	cutoff := asOf.Add(-after)
	captured := map[string]time.Time{}
	settledIDs := map[string]bool{}
	flagged := map[string]bool{}
	for _, e := range history {
		switch e := e.(type) {
		case Captured:
			if _, ok := captured[e.CaptureID]; !ok {
				captured[e.CaptureID] = e.OccurredAt
			}
		case LineSettled:
			if e.Line.Kind == settlement.KindCharge {
				settledIDs[e.Line.CaptureID] = true
			}
		case Flagged:
			if e.Kind == ReconUnsettled {
				flagged[e.Key] = true
			}
		}
	}
	var ids []string
	for id, at := range captured {
		if !settledIDs[id] && !flagged[id] && !at.After(cutoff) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make([]Event, 0, len(ids))
	for _, id := range ids {
		out = append(out, Flagged{Meta: meta, Kind: ReconUnsettled, Key: id, Details: fmt.Sprintf(
			"capture %s of %s has no settlement line %s after it", id, captured[id].Format(time.RFC3339), after)})
	}
	return out
}
