package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queued waits (without a clock) until class c has n waiters.
func (g *gate) queued(c Class, n int) {
	for {
		g.mu.Lock()
		l := g.waiters[c].Len()
		g.mu.Unlock()
		if l >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWaiterAtItsOwnCapDoesNotHoldBackLowerClasses: an upload waiting
// because the uploads' own cap is spent could not use a freed slot, so a
// read must not queue behind it: it is admitted at once while the total
// has room, and a read waiting for its own cap takes a freed read slot.
// (Before: every read queued behind such an upload until QueueWait, then
// was shed 503, with the server otherwise idle.)
func TestWaiterAtItsOwnCapDoesNotHoldBackLowerClasses(t *testing.T) {
	g := newGate(Limits{MaxInFlight: 100, MaxInFlightUploads: 1, MaxInFlightReads: 1, QueueWait: time.Hour}.withDefaults())
	upload, ok := g.acquire(context.Background(), Upload)
	require.True(t, ok)
	defer upload()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go g.acquire(ctx, Upload) // waits at the uploads' cap
	g.queued(Upload, 1)

	// A cancelled context: admitted only if admitted at once.
	done, cancelled := context.WithCancel(context.Background())
	cancelled()
	read, ok := g.acquire(done, Read)
	require.True(t, ok, "a read is admitted at once: the waiting upload cannot take its slot")

	got := make(chan bool, 1)
	go func() { _, ok := g.acquire(context.Background(), Read); got <- ok }()
	g.queued(Read, 1)
	read() // hands the slot to the waiting read, synchronously
	g.mu.Lock()
	assert.Zero(t, g.waiters[Read].Len(), "the freed read slot went to the waiting read")
	assert.Equal(t, 1, g.n[Read])
	g.mu.Unlock()
	assert.True(t, <-got)
}
