package stripe

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi/stripefake"
	"github.com/onceledger/onceledger/domain/settlement"
)

// A Balance Transactions list with a partial capture (100.00 authorized,
// 60.00 captured: a charge transaction for the authorization, a
// partial_capture_reversal for the uncaptured 40.00) is read, not refused
// whole (issue 24, item 5): the charge line's gross is the authorization,
// as the itemized report prints it, so the two formats give the same lines.
func TestPartialCaptureBalanceTransactionsAreRead(t *testing.T) {
	l := settlement.Line{Provider: "stripe", Kind: settlement.KindCharge, SourceType: "charge", LineID: "txn_pc1",
		PaymentKey: "pi_pc1", CaptureID: "ch_pc1", Gross: 10000, Fee: 204, Net: 9796, Currency: "USD",
		OriginalAmount: 10000, OriginalCurrency: "USD", PayoutID: "po_pc", OccurredAt: time.Unix(1764410400, 0).UTC()}
	ch, rev := stripefake.PartialCapture(l, 6000, "txn_pc2", "re_pc1")
	list := []byte(`{"object":"list","data":[` + string(ch) + `,` + string(rev) + `],"has_more":false}`)
	var got []settlement.Line
	err := ParseSettlement(bytes.NewReader(list), report.Options{PayoutID: "po_pc"}, func(r report.Record) error {
		got = append(got, r.Line)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, l.FactsHash(), got[0].FactsHash(), "the charge line as the report gives it")
	assert.Equal(t, int64(10000), got[0].OriginalAmount)
	assert.Equal(t, settlement.KindAdjustment, got[1].Kind)
	assert.Equal(t, "partial_capture_reversal", got[1].SourceType)
	assert.Equal(t, "ch_pc1", got[1].CaptureID)
	assert.Equal(t, "pi_pc1", got[1].PaymentKey)
	assert.Equal(t, int64(-4000), got[1].Net)
	assert.Equal(t, int64(10000-204-4000), got[0].Net+got[1].Net, "the payout's lines add up to what Stripe paid")
}
