package adyen

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/settlement"
)

// A batch that takes over a negative balance (Balancetransfer from batch
// 41), with every correction type, ending in a MerchantPayout of Net Credit
// 2.60: Adyen debits the merchant's bank. Each line gets the kind that says
// what its money did (docs.adyen.com journal types), and the lines add up to
// the payout as Adyen signs it.
func TestSettlementCorrectionsAndNegativePayout(t *testing.T) {
	data, err := os.ReadFile("testdata/settlement/corrections_batch_42.csv")
	require.NoError(t, err)
	recs, err := parseAdyen(t, string(data), report.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 9)
	type want struct {
		kind        settlement.Kind
		net         int64
		counterpart string
	}
	got := map[string]want{}
	var sum int64
	var payout settlement.Line
	for _, r := range recs {
		l := r.Line
		require.NoError(t, l.Validate(), l.SourceType)
		got[l.SourceType] = want{l.Kind, l.Net, l.Counterpart}
		if l.Kind == settlement.KindPayout {
			payout = l
			continue
		}
		sum += l.Net
	}
	assert.Equal(t, map[string]want{
		"Settled":           {settlement.KindCharge, 974, ""},
		"Balancetransfer":   {settlement.KindAdjustment, -1200, ""},
		"DepositCorrection": {settlement.KindAdjustment, -79, settlement.CounterpartReserve},
		"ReserveAdjustment": {settlement.KindAdjustment, 25, settlement.CounterpartReserve},
		"InvoiceDeduction":  {settlement.KindFee, -150, ""},
		"PaymentCost":       {settlement.KindFee, -40, ""},
		"MatchedStatement":  {settlement.KindAdjustment, 200, settlement.CounterpartBank},
		"ManualCorrected":   {settlement.KindAdjustment, 10, ""},
		"MerchantPayout":    {settlement.KindPayout, 260, ""},
	}, got)
	// Net Credit on the payout line: a paid payout of −2.60 (a bank debit),
	// not a payout that came back.
	assert.True(t, payout.BankDebit)
	assert.True(t, payout.NoWebhook)
	assert.Equal(t, "M/42/EUR", payout.PayoutID)
	assert.Equal(t, int64(-260), sum, "the lines add up to the payout of −2.60")
}

// A payout line of Net Debit is paid to the bank, and a returned payout
// (BankInstructionReturned, a credit) stays a returned one: neither is a
// bank debit.
func TestSettlementPayoutDirections(t *testing.T) {
	head := "Merchant Account,Psp Reference,Creation Date,TimeZone,Type,Modification Reference,Net Currency,Net Debit (NC),Net Credit (NC),Batch Number\n"
	recs, err := parseAdyen(t, head+
		"M,,2026-12-01 04:00:00,CET,MerchantPayout,TX1XT batch 43,EUR,5.00,,43\n"+
		"M,,2026-12-01 05:00:00,CET,BankInstructionReturned,TX0XT batch 40,EUR,,5.00,43\n", report.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, int64(-500), recs[0].Line.Gross)
	assert.False(t, recs[0].Line.BankDebit)
	assert.Equal(t, int64(500), recs[1].Line.Gross)
	assert.False(t, recs[1].Line.BankDebit, "a returned payout is not a bank debit")
}
