package square

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/settlement"
)

// A PAID payout of −3.55 (Square debited the seller's bank) is a paid
// payout moving money the other way: a payout line of gross +3.55 marked
// as a bank debit, not a payout that came back.
func TestNegativePaidPayoutIsABankDebit(t *testing.T) {
	recs, err := parseEntries(t, `{"payout_entries":[{"id":"poe_1","payout_id":"po_neg","effective_at":"2026-11-29T12:01:02Z",`+
		`"type":"FEE","gross_amount_money":{"amount":-355,"currency":"USD"},"fee_amount_money":{"amount":0,"currency":"USD"},`+
		`"net_amount_money":{"amount":-355,"currency":"USD"}}],`+
		`"payout":{"id":"po_neg","status":"PAID","location_id":"L1","created_at":"2026-11-30T00:00:00Z",`+
		`"amount_money":{"amount":-355,"currency":"USD"},"type":"BATCH"}}`)
	require.NoError(t, err)
	var payout *settlement.Line
	for i := range recs {
		if recs[i].Line.Kind == settlement.KindPayout {
			payout = &recs[i].Line
		}
	}
	require.NotNil(t, payout)
	assert.Equal(t, int64(355), payout.Gross)
	assert.True(t, payout.BankDebit)
	require.NoError(t, payout.Validate())
}
