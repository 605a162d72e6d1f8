package readmodel_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// The period queries on an empty ledger; their figures are tested through
// the projector in projections/periods_test.go.
func TestPeriodQueriesOnAnEmptyLedger(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := readmodel.New(pgtest.NewPool(t))

	ps, err := db.Periods(ctx)
	require.NoError(t, err)
	assert.Empty(t, ps)
	_, err = db.TrialBalance(ctx, period.MustParse("2026-11"))
	assert.ErrorIs(t, err, readmodel.ErrUnknownPeriod)
	j, err := db.Journal(ctx, views.JournalFilter{})
	require.NoError(t, err)
	assert.Empty(t, j)
	at, frozen, err := db.FrozenPeriods(ctx)
	require.NoError(t, err)
	assert.Empty(t, frozen)
	assert.Zero(t, at)
}

func TestJournalCells(t *testing.T) {
	id := uuid.MustParse("7d5c3f5e-1111-4222-8333-944455556666")
	r := views.JournalRow{
		Date: "2026-12-01", Account: "revenue:sales", Credit: 1050, CreditDecimal: "10.50", Currency: "USD",
		Memo: "payment.captured", Provider: "stripe", PaymentID: "pi_1", EventID: id,
		EffectiveAt: time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC), BookedAt: time.Date(2026, 12, 2, 1, 0, 0, 5, time.UTC),
		Period: period.MustParse("2026-12"), LateAdjustment: true, Adjusts: period.MustParse("2026-11"), Actor: "alice",
	}
	assert.Equal(t, []string{"2026-12-01", "revenue:sales", "", "10.50", "USD", "payment.captured", "stripe", "pi_1",
		id.String(), "", "1050", "2026-11-30T23:00:00Z", "2026-12-02T01:00:00.000000005Z", "2026-12", "true", "2026-11", "alice"}, r.Cells())
	assert.Len(t, views.JournalColumns, len(r.Cells()))
}

func TestTrialBalanceCells(t *testing.T) {
	tb := views.TrialBalance{
		Info:  views.PeriodInfo{Period: period.MustParse("2026-11")},
		Lines: []period.Balance{{Account: "revenue:sales", Currency: "JPY", Opening: -500, Credits: 1000, Closing: -1500}},
	}
	assert.Equal(t, [][]string{{"2026-11", "revenue:sales", "JPY", "-500", "0", "1000", "-1500", "-500", "0", "1000", "-1500"}}, tb.Cells())
	tb.Lines[0].Currency = "USD"
	assert.Equal(t, []string{"2026-11", "revenue:sales", "USD", "-5.00", "0.00", "10.00", "-15.00", "-500", "0", "1000", "-1500"}, tb.Cells()[0])
	assert.Len(t, views.TrialBalanceColumns, len(tb.Cells()[0]))
}
