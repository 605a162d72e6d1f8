package app

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// matchReads is a double of the read model the matcher watches.
type matchReads struct {
	mu      sync.Mutex
	changed time.Time
}

func (m *matchReads) BankAccounts(context.Context) ([]string, error) {
	return []string{"main", "usd"}, nil
}

func (m *matchReads) PayoutsChangedAt(context.Context) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed, nil
}

// TestMatchBanksWhenPayoutsChange: the matcher tells every account the
// payouts once per change of the payouts read model, not on every tick.
func TestMatchBanksWhenPayoutsChange(t *testing.T) {
	reads := &matchReads{changed: time.Unix(100, 0)}
	calls := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		matchBanks(ctx, reads, func(_ context.Context, a string) (int, error) { calls <- a; return 1, nil },
			time.Millisecond, slog.New(slog.DiscardHandler))
		close(done)
	}()
	assert.ElementsMatch(t, []string{"main", "usd"}, []string{<-calls, <-calls})
	reads.mu.Lock()
	reads.changed = time.Unix(200, 0)
	reads.mu.Unlock()
	assert.ElementsMatch(t, []string{"main", "usd"}, []string{<-calls, <-calls})
	cancel()
	<-done
	assert.Empty(t, calls, "no change, no match")
}
