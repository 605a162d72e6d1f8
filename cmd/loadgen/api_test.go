package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLagReport(t *testing.T) {
	tr := newLagTracker()
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Two projections; "slow" trails. During the load: polls 0..3.
	tr.add(at(0), []projection{{Name: "fast", Position: 10, Lag: 0}, {Name: "slow", Position: 5, Lag: 5}}, true)
	tr.add(at(100), []projection{{Name: "fast", Position: 20, Lag: 2}, {Name: "slow", Position: 8, Lag: 14}}, true)
	tr.add(at(200), []projection{{Name: "fast", Position: 22, Lag: 0}, {Name: "slow", Position: 12, Lag: 10}}, true)
	tr.add(at(300), []projection{{Name: "fast", Position: 22, Lag: 0}, {Name: "slow", Position: 22, Lag: 0}}, true)
	// Catch-up polls: not counted in the event lag, usable as "later".
	tr.add(at(400), []projection{{Name: "fast", Position: 22, Lag: 0}, {Name: "slow", Position: 22, Lag: 0}}, false)
	r := tr.report()
	assert.True(t, r.Polls == 4 && r.EventsMax == 14 && r.EventsP50 == 5 && r.EventsP99 == 14, "events %+v", r)
	// slow@0: head ~10, reached at 200 → 0.2s; slow@100: head ~22, reached
	// at 300 → 0.2s; slow@200: head ~22 → 0.1s; fast@100: head ~22 → 0.1s;
	// the four lag-0 samples count 0.
	assert.True(t, r.SecondsKnown == 8 && r.SecondsMax == 0.2 && r.SecondsP50 == 0, "seconds %+v", r)
}

func TestCaughtUpNeedsStablePositions(t *testing.T) {
	a := []projection{{Name: "x", Position: 5}, {Name: "y", Position: 7}}
	b := []projection{{Name: "y", Position: 7}, {Name: "x", Position: 5}}
	assert.True(t, caughtUp(a) && samePositions(a, b), "same positions in another order")
	assert.False(t, samePositions(a, []projection{{Name: "x", Position: 6}, {Name: "y", Position: 7}}) || samePositions(a, nil),
		"moved positions taken as stable")
	assert.False(t, caughtUp(nil) || caughtUp([]projection{{Name: "x", Lag: 1}}), "caught up with nothing or with lag")
}
