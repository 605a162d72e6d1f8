package operations_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/period"
)

var (
	_ operations.EventStore = (*postgres.EventStore)(nil)
	_ operations.EventStore = (*esdb.Store)(nil)
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func stores(t *testing.T) map[string]func(t *testing.T) operations.EventStore {
	return map[string]func(t *testing.T) operations.EventStore{
		"postgres": func(t *testing.T) operations.EventStore { return postgres.NewEventStore(pgtest.NewPool(t)) },
		"esdb": func(t *testing.T) operations.EventStore {
			fake := esdbfake.Start(t)
			s, err := esdb.Dial(fake.URL())
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
	}
}

func TestCloseAndReopenAreEvents(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			store := open(t)
			akl, err := time.LoadLocation("Pacific/Auckland")
			require.NoError(t, err)
			now := time.Date(2026, 12, 15, 9, 0, 0, 0, time.UTC)
			ops := operations.NewPeriods(store, akl, func() time.Time { return now })
			nov, dec := period.MustParse("2026-11"), period.MustParse("2026-12")

			closed, err := ops.ClosePeriod(ctx, nov, "alice", "November books")
			require.NoError(t, err)
			assert.Equal(t, period.Closed{Period: nov, Zone: "Pacific/Auckland", Actor: "alice", Note: "November books", At: now}, closed)

			_, err = ops.ClosePeriod(ctx, nov, "alice", "")
			assert.ErrorIs(t, err, period.ErrAlreadyClosed)
			_, err = ops.ClosePeriod(ctx, dec, "alice", "")
			assert.ErrorIs(t, err, period.ErrPeriodNotEnded)
			_, err = ops.ReopenPeriod(ctx, nov, "bob", " ")
			assert.ErrorIs(t, err, period.ErrReasonRequired)
			_, err = ops.ClosePeriod(ctx, dec, "", "")
			assert.ErrorIs(t, err, period.ErrActorRequired)

			reopened, err := ops.ReopenPeriod(ctx, nov, "bob", "a late invoice")
			require.NoError(t, err)
			assert.Equal(t, period.Reopened{Period: nov, Actor: "bob", Reason: "a late invoice", At: now}, reopened)
			_, err = ops.ClosePeriod(ctx, nov, "alice", "again")
			require.NoError(t, err)

			// The audit trail is the stream.
			recs, err := store.ReadStream(ctx, period.StreamID)
			require.NoError(t, err)
			require.Len(t, recs, 3)
			var types []string
			for _, r := range recs {
				types = append(types, r.Type)
			}
			assert.Equal(t, []string{period.TypeClosed, period.TypeReopened, period.TypeClosed}, types)
			ev, err := period.Decode(recs[1].Type, recs[1].Data)
			require.NoError(t, err)
			assert.Equal(t, reopened, ev)

			cal, err := ops.Calendar(ctx)
			require.NoError(t, err)
			assert.Equal(t, nov, cal.ClosedThrough())

			// Another zone than the books' is refused.
			_, err = operations.NewPeriods(store, time.UTC, func() time.Time { return now.AddDate(0, 1, 0) }).ClosePeriod(ctx, dec, "alice", "")
			assert.ErrorIs(t, err, period.ErrZoneMismatch)
		})
	}
}

// Operators racing to close the same months: every month is closed exactly
// once, in order, and every loser is told why.
func TestConcurrentClosesRecordEachCloseOnce(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			store := open(t)
			ops := operations.NewPeriods(store, time.UTC, func() time.Time { return time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC) })
			months := []period.Period{period.MustParse("2027-01"), period.MustParse("2027-02"), period.MustParse("2027-03")}
			var wg sync.WaitGroup
			var mu sync.Mutex
			wins := map[period.Period]int{}
			var unexpected []error
			for g := range 16 {
				wg.Go(func() {
					for _, m := range months {
						for {
							_, err := ops.ClosePeriod(ctx, m, fmt.Sprintf("op%d", g), "")
							mu.Lock()
							switch {
							case err == nil:
								wins[m]++
							case errors.Is(err, period.ErrAlreadyClosed), errors.Is(err, period.ErrEarlierPeriodOpen),
								errors.Is(err, operations.ErrContention):
							default:
								unexpected = append(unexpected, err)
							}
							mu.Unlock()
							if !errors.Is(err, period.ErrEarlierPeriodOpen) && !errors.Is(err, operations.ErrContention) {
								break
							}
						}
					}
				})
			}
			wg.Wait()
			assert.Empty(t, unexpected)
			for _, m := range months {
				assert.Equal(t, 1, wins[m], "closes of %s", m)
			}
			recs, err := store.ReadStream(ctx, period.StreamID)
			require.NoError(t, err)
			require.Len(t, recs, len(months))
			for i, r := range recs {
				ev, err := period.Decode(r.Type, r.Data)
				require.NoError(t, err)
				assert.Equal(t, months[i], ev.PeriodOf())
			}
		})
	}
}
