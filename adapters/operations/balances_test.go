package operations_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/assertion"
)

type noItems struct{}

func (noItems) ItemAbout(context.Context, string) (time.Time, bool, error) {
	return time.Time{}, false, nil
}

// A statement's points are recorded once, on one stream per UTC day,
// however often and however concurrently the same file is imported; a
// point whose key was stated with another amount is a conflict. Both
// stores.
func TestStatementsAreRecordedOncePerDay(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			store := open(t)
			now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			b := operations.NewBalances(store, nil, noItems{}, func() time.Time { return now })
			acct := "provider:alipay" + fmt.Sprint(time.Now().UnixNano()%100000) + ":balance"
			day1 := time.Date(2026, 11, 1, 23, 0, 0, 0, time.UTC)
			var pts []assertion.Point
			for i := range 5000 {
				at := day1.Add(time.Duration(i) * time.Second) // crosses midnight: two days
				pts = append(pts, assertion.Point{Key: "at:" + at.Format(time.RFC3339), AsOf: at, Amount: int64(i)})
			}
			st := assertion.Statement{Account: acct, Currency: "CNY", Source: "alipay account bill", Points: pts}
			var wg sync.WaitGroup
			counts := make([]int, 4)
			for i := range counts {
				wg.Go(func() {
					n, err := b.State(ctx, st)
					assert.NoError(t, err)
					counts[i] = n
				})
			}
			wg.Wait()
			total := 0
			for _, n := range counts {
				total += n
			}
			assert.Equal(t, 5000, total, "each point once, whatever the race")
			n, err := b.State(ctx, st)
			require.NoError(t, err)
			assert.Zero(t, n)
			for _, d := range []time.Time{day1, day1.Add(2 * time.Hour)} {
				recs, err := store.ReadStream(ctx, assertion.StatementStream(acct, "CNY", d))
				require.NoError(t, err)
				assert.NotEmpty(t, recs)
			}
			st.Points = []assertion.Point{{Key: pts[0].Key, AsOf: pts[0].AsOf, Amount: 99}}
			_, err = b.State(ctx, st)
			assert.ErrorIs(t, err, assertion.ErrConflict)
		})
	}
}
