package payment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/settlement"
)

func adjustmentLine(key, counterpart string, net int64) settlement.Line {
	return settlement.Line{Provider: "adyen", Kind: settlement.KindAdjustment, SourceType: "DepositCorrection", Key: key,
		Gross: net, Net: net, Currency: "EUR", OriginalAmount: net, OriginalCurrency: "EUR", PayoutID: "M/7/EUR",
		OccurredAt: t0, NoWebhook: true, Counterpart: counterpart}
}

// An adjustment line naming its counterpart moves its net between the
// provider balance and that account, once; one without posts nothing (a
// Balancetransfer moves the balance between batches).
func TestAdjustmentLinePostsAgainstItsCounterpart(t *testing.T) {
	s := &stream{t: t}
	withheld := adjustmentLine("k1", settlement.CounterpartReserve, -7893)
	wired := adjustmentLine("k2", settlement.CounterpartBank, 5000)
	wired.SourceType = "MatchedStatement"
	moved := adjustmentLine("k3", "", -100)
	moved.SourceType = "Balancetransfer"
	for _, l := range []settlement.Line{withheld, wired, moved} {
		require.NoError(t, l.Validate())
		wantTypes(t, s.deliver(settled(l)), TypeLineSettled)
	}
	assert.Equal(t, map[balanceKey]int64{
		{ledger.ProviderBalance("adyen"), "EUR"}: -7893 + 5000,
		{ledger.ProviderReserve("adyen"), "EUR"}: 7893,
		{ledger.BankPayouts, "EUR"}:              -5000,
	}, balances(s.history))
	for _, e := range s.history {
		require.NoError(t, ledger.Check(Postings(e)))
	}
	// The same line again: nothing.
	wantTypes(t, s.deliver(settled(withheld)))

	bad := withheld
	bad.Kind = settlement.KindFee
	assert.ErrorIs(t, bad.Validate(), settlement.ErrInvalidLine)
	bad = withheld
	bad.Counterpart = "elsewhere"
	assert.ErrorIs(t, bad.Validate(), settlement.ErrInvalidLine)
	// A counterpart changes the line's facts: the line recorded without it
	// is not the same fact.
	assert.NotEqual(t, withheld.FactsHash(), adjustmentLine("k1", "", -7893).FactsHash())
}
