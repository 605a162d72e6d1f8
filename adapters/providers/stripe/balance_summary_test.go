package stripe_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
)

// A balance summary report (balance.summary.1) records no line: its
// starting and ending balances per currency are balance assertions, as of
// the last instant before the interval and the last instant of it, in the
// report run's zone (UTC unless told); a row without a date in its
// description is refused naming the column.
func TestBalanceSummaryStatesTheBalances(t *testing.T) {
	const file = "category,description,net_amount,currency\n" +
		"starting_balance,Starting balance (2026-11-01),1000.00,usd\n" +
		"activity_gross,Activity before fees,500.00,usd\n" +
		"activity_fee,Less fees,-15.00,usd\n" +
		"activity,Net activity,485.00,usd\n" +
		"payouts,Total payouts,-400.00,usd\n" +
		"ending_balance,Ending balance (2026-11-30),1085.00,usd\n" +
		"starting_balance,Starting balance (2026-11-01),7,jpy\n" +
		"ending_balance,Ending balance (2026-11-30),9,jpy\n"
	var got []report.Stated
	lines := 0
	opt := report.Options{Stated: func(s report.Stated) error { got = append(got, s); return nil }}
	require.NoError(t, stripe.ParseSettlement(strings.NewReader(file), opt, func(report.Record) error { lines++; return nil }))
	assert.Zero(t, lines)
	require.Len(t, got, 4)
	assert.Equal(t, "provider:stripe:balance", got[0].Account)
	assert.Equal(t, int64(100000), got[0].Amount)
	assert.Equal(t, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(-time.Microsecond), got[0].AsOf)
	assert.Equal(t, int64(108500), got[1].Amount)
	assert.Equal(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(-time.Microsecond), got[1].AsOf)
	assert.Equal(t, int64(9), got[3].Amount)

	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	got = nil
	opt.Zone = shanghai
	require.NoError(t, stripe.ParseSettlement(strings.NewReader(file), opt, func(report.Record) error { return nil }))
	assert.Equal(t, time.Date(2026, 11, 1, 0, 0, 0, 0, shanghai).Add(-time.Microsecond), got[0].AsOf)

	err = stripe.ParseSettlement(strings.NewReader("category,description,net_amount,currency\nending_balance,Ending balance,1.00,usd\n"),
		opt, func(report.Record) error { return nil })
	var pe *report.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "description", pe.Column)
}
