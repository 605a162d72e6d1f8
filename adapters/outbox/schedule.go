package outbox

import (
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/projections/outbound"
)

// Schedule is the retry schedule after each failed attempt of an event
// (docs/events.md): about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, each
// with ±20% jitter; after the last, the subscription is disabled. About 28
// hours in all: a receiver down for a day gets everything when it is back.
var Schedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// MaxAttempts is how often an event is tried before the subscription is
// disabled: once, then once per step of Schedule.
var MaxAttempts = len(Schedule) + 1

// next returns when attempt (1 = the first, just failed) is retried, and
// false when the schedule has run out.
func next(now time.Time, attempt int, jitter func() float64) (time.Time, bool) {
	if attempt >= MaxAttempts {
		return time.Time{}, false
	}
	d := Schedule[attempt-1]
	f := 0.8 + 0.4*jitter() // ±20%, so that endpoints that failed together do not retry together
	return now.Add(time.Duration(float64(d) * f)), true
}

func defaultJitter() float64 { return rand.Float64() }

// BatchType is the body type of a batch of settlement.line events
// (docs/events.md, "Settlement lines in batches").
const BatchType = "settlement.line.batch"

// MaxBatch is the most settlement lines one POST carries.
const MaxBatch = 100

// Batch is the body of a settlement.line batch: the lines of one payout
// in feed order. Its id (the webhook-id) is derived from its events' ids;
// a consumer deduplicates on each event's own id, since a replay may cut
// the batches elsewhere.
type Batch struct {
	ID       uuid.UUID        `json:"id"`
	Type     string           `json:"type"`
	Version  int              `json:"version"`
	PayoutID string           `json:"payout_id"`
	Events   []outbound.Event `json:"events"`
}

// batchNamespace names batch ids (UUIDv5 of the members' ids). Fixed.
var batchNamespace = uuid.MustParse("a6f0d0c4-1b1e-4f43-9a55-4e0c2b8f7d21")

func newBatch(payout string, evs []outbound.Event) Batch {
	b := make([]byte, 0, 16*len(evs))
	for _, e := range evs {
		b = append(b, e.ID[:]...)
	}
	return Batch{ID: uuid.NewSHA1(batchNamespace, b), Type: BatchType, Version: outbound.Version, PayoutID: payout, Events: evs}
}

// queueRows turns one page of the feed into a subscription's queue rows:
// matching events one by one on their stream, settlement lines (when the
// filter lists them) in batches of up to MaxBatch per payout, on the
// payout's key.
func queueRows(f Filter, lane int, evs []outbound.Event, from time.Time) ([]Queued, error) {
	var out []Queued
	lines := map[string][]outbound.Event{}
	var order []string
	flush := func(payout string) error {
		b := newBatch(payout, lines[payout])
		body, err := json.Marshal(b)
		if err != nil {
			return err
		}
		last := b.Events[len(b.Events)-1]
		out = append(out, Queued{Lane: lane, StreamKey: "settlement-lines:" + payout, EventID: b.ID, EventType: BatchType,
			Position: last.Position, Body: body})
		lines[payout] = nil
		return nil
	}
	for _, e := range evs {
		if !f.Matches(e) || (!from.IsZero() && e.RecordedAt.Before(from)) {
			continue
		}
		if e.Type == outbound.SettlementLine {
			payout, _ := e.Data["payout_id"].(string)
			if lines[payout] == nil {
				order = append(order, payout)
			}
			lines[payout] = append(lines[payout], e)
			if len(lines[payout]) == MaxBatch {
				if err := flush(payout); err != nil {
					return nil, err
				}
			}
			continue
		}
		body, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		out = append(out, Queued{Lane: lane, StreamKey: e.Stream, EventID: e.ID, EventType: e.Type, Position: e.Position, Body: body})
	}
	for _, p := range order {
		if len(lines[p]) > 0 {
			if err := flush(p); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
