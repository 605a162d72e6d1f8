package adyen

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
)

// A batch whose lines, its MerchantPayout included, add up to zero is paid
// out whole: the report states its scope holds nothing, as of its latest
// line. A batch that does not add up states nothing (payout_mismatch names
// it).
func TestBatchesPaidOutWholeAreStated(t *testing.T) {
	data, err := os.ReadFile("testdata/settlement/settlement_detail_report_batch_41.csv")
	require.NoError(t, err)
	parse := func(data string) []report.Stated {
		var got []report.Stated
		opt := report.Options{Stated: func(s report.Stated) error { got = append(got, s); return nil }}
		require.NoError(t, ParseSettlement(strings.NewReader(data), opt, func(report.Record) error { return nil }))
		return got
	}
	got := parse(string(data))
	require.Len(t, got, 2)
	assert.Equal(t, report.Stated{Account: "provider:adyen:batch:OnceLedgerECOM/41/EUR", Currency: "EUR",
		AsOf: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Amount: 0, Source: BatchSource}, got[0])
	assert.Equal(t, "provider:adyen:batch:OnceLedgerECOM/41/GBP", got[1].Account)

	// The fee line one cent more than the payout leaves: EUR is not paid
	// out whole; GBP still is.
	changed := strings.Replace(string(data), "Fee,Transaction Fees June      16 2022,,,,,EUR,0.12", "Fee,Transaction Fees June      16 2022,,,,,EUR,0.13", 1)
	require.NotEqual(t, string(data), changed)
	got = parse(changed)
	require.Len(t, got, 1)
	assert.Equal(t, "provider:adyen:batch:OnceLedgerECOM/41/GBP", got[0].Account)
}
