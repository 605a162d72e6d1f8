package square

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/settlement"
)

// Reserve entries move the seller's money into Square's risk reserve and
// back (ActivityType RESERVE_HOLD, RESERVE_RELEASE): adjustments against
// provider:square:reserve. A manual ADJUSTMENT names no account: it is
// recorded and counted, and posts nothing.
func TestReserveEntriesNameTheReserve(t *testing.T) {
	entry := func(id, typ string, net int) string {
		return `{"id":"` + id + `","payout_id":"po_r","effective_at":"2026-11-29T12:01:02Z","type":"` + typ + `",` +
			`"gross_amount_money":{"amount":` + strconv.Itoa(net) + `,"currency":"USD"},"fee_amount_money":{"amount":0,"currency":"USD"},` +
			`"net_amount_money":{"amount":` + strconv.Itoa(net) + `,"currency":"USD"}}`
	}
	recs, err := parseEntries(t, `{"payout_entries":[`+entry("poe_1", "RESERVE_HOLD", -500)+`,`+
		entry("poe_2", "RESERVE_RELEASE", 200)+`,`+entry("poe_3", "ADJUSTMENT", 7)+`]}`)
	require.NoError(t, err)
	require.Len(t, recs, 3)
	got := map[string]string{}
	for _, r := range recs {
		require.NoError(t, r.Line.Validate())
		assert.Equal(t, settlement.KindAdjustment, r.Line.Kind)
		got[r.Line.SourceType] = r.Line.Counterpart
	}
	assert.Equal(t, map[string]string{"RESERVE_HOLD": settlement.CounterpartReserve,
		"RESERVE_RELEASE": settlement.CounterpartReserve, "ADJUSTMENT": ""}, got)
}
