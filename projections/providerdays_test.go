package projections_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/projections/views"
)

// A provider's day is awaiting_report until a file covers it, balanced
// when every balance stated as of it agrees (its content hash recomputed
// from the journal), unbalanced naming the differing balances otherwise.
func TestProviderDays(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	stop := f.run(ctx)
	defer func() { require.NoError(t, stop()) }()
	d1 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	d2, d3 := d1.AddDate(0, 0, 1), d1.AddDate(0, 0, 2)
	stream := assertion.StreamID(ledger.ProviderBalance("stripe"), "USD")
	file := func(at time.Time, key string, amount int64) assertion.Stated {
		s := stated(at, key, amount)
		s.Source = "stripe balance summary"
		return s
	}
	f.capture(ctx, "pd_1", d1, 1000, 30)
	f.capture(ctx, "pd_2", d1.Add(time.Hour), 500, 0)
	f.capture(ctx, "pd_3", d2, 100, 0)
	f.capture(ctx, "pd_4", d3, 100, 0)
	f.appendAssertion(ctx, stream, file(d1.Add(5*time.Hour), "d1", 1470), file(d3.Add(time.Hour), "d3", 1500))
	f.waitCaughtUp(ctx)

	days, err := f.db.ProviderDays(ctx, views.ProviderDayFilter{Provider: "stripe", From: "2026-11-02", To: "2026-11-04"})
	require.NoError(t, err)
	require.Len(t, days, 3)
	assert.Equal(t, views.DayBalanced, days[0].Status, "%+v", days[0])
	assert.Equal(t, int64(2), days[0].Events)
	assert.Equal(t, views.DayAwaitingReport, days[1].Status)
	assert.Equal(t, views.DayUnbalanced, days[2].Status)
	assert.Equal(t, []string{"1 stated balances differ from the ledger"}, days[2].Why)

	// The hash, recomputed from the journal.
	rows, err := f.db.Journal(ctx, views.JournalFilter{From: d1.Truncate(24 * time.Hour), To: d2.Truncate(24 * time.Hour)})
	require.NoError(t, err)
	h := make([]byte, sha256.Size)
	seen := map[uuid.UUID]bool{}
	for _, r := range rows {
		if r.Provider != "stripe" || seen[r.EventID] {
			continue
		}
		seen[r.EventID] = true
		sum := sha256.Sum256(append(append([]byte{}, h...), r.EventID[:]...))
		h = sum[:]
	}
	assert.Equal(t, hex.EncodeToString(h), days[0].Hash())
}
