package square

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/settlement"
)

func parseEntries(t *testing.T, data string) ([]report.Record, error) {
	t.Helper()
	return providertest.ParseReport(ParseSettlement, data, report.Options{})
}

func entriesFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/settlement/list_payout_entries.json")
	require.NoError(t, err)
	return string(b)
}

func TestParsePayoutEntries(t *testing.T) {
	recs, err := parseEntries(t, entriesFixture(t))
	require.NoError(t, err)
	require.Len(t, recs, 5)
	const po = "po_b345d2c7-90b3-4f0b-a2a5-df8a1c7a1e3c"
	assert.Equal(t, settlement.Line{
		Provider: "square", Kind: settlement.KindCharge, SourceType: "CHARGE", LineID: "poe_ZQWcw41d0SGJS6IWd4cSi8mKHk",
		PaymentKey: "KkAkhdMsgzn59SM8A89WgKwekxLZY", CaptureID: "KkAkhdMsgzn59SM8A89WgKwekxLZY",
		Gross: 1200, Fee: 65, Net: 1135, Currency: "USD", OriginalAmount: 1200, OriginalCurrency: "USD",
		PayoutID: po, OccurredAt: time.Date(2026, 11, 29, 12, 1, 2, 0, time.UTC),
	}, recs[0].Line)
	assert.Equal(t, 3, recs[0].Pos)

	refund := recs[1].Line
	assert.Equal(t, settlement.KindRefund, refund.Kind)
	assert.Equal(t, []int64{-300, -20, -280}, []int64{refund.Gross, refund.Fee, refund.Net})

	dispute := recs[2].Line
	assert.Equal(t, settlement.KindDispute, dispute.Kind)
	assert.Equal(t, "XDgyFu7yo1E2S5lQGGpYn", dispute.DisputeID)

	fee := recs[3].Line
	assert.Equal(t, settlement.KindFee, fee.Kind)
	assert.Equal(t, int64(-10), fee.Net)

	payout := recs[4].Line
	assert.Equal(t, settlement.KindPayout, payout.Kind)
	assert.Equal(t, po, payout.PayoutID)
	assert.Equal(t, int64(355), payout.Gross, "a negative payout is a debit from the bank: money into the balance")
	assert.Equal(t, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), payout.AvailableOn)
	var sum int64
	for _, r := range recs[:4] {
		sum += r.Line.Net
	}
	assert.Equal(t, -payout.Net, sum, "the entries add up to the payout")
}

func TestPayoutEntryIDsMatchWebhooks(t *testing.T) {
	recs, err := parseEntries(t, entriesFixture(t))
	require.NoError(t, err)
	for i, f := range []string{"payment_updated_completed.json", "refund_updated_completed.json", "dispute_created.json"} {
		raw, err := os.ReadFile("testdata/" + f)
		require.NoError(t, err)
		ev, err := normalize(raw)
		require.NoError(t, err)
		require.Len(t, ev.Facts, 1, f)
		assert.Equal(t, ev.PaymentKey, recs[i].Line.PaymentKey, f)
		assert.Equal(t, ev.Facts[0].BusinessID, recs[i].Line.BusinessID(), f)
	}
}

func TestParsePayoutEntriesMalformed(t *testing.T) {
	for _, c := range []struct {
		name, body, column string
		line               int
	}{
		{"net is not gross minus fee", `{"payout_entries":[
{"id":"poe_1","payout_id":"po_1","effective_at":"2026-11-29T12:01:02Z","type":"CHARGE","gross_amount_money":{"amount":100,"currency":"USD"},"fee_amount_money":{"amount":19,"currency":"USD"},"net_amount_money":{"amount":80,"currency":"USD"},"type_charge_details":{"payment_id":"p"}}]}`,
			"payout_entries[0].net_amount_money", 2},
		{"fractional amount", `{"payout_entries":[{"id":"poe_1","payout_id":"po_1","effective_at":"2026-11-29T12:01:02Z","type":"CHARGE","gross_amount_money":{"amount":1.5,"currency":"USD"},"type_charge_details":{"payment_id":"p"}}]}`,
			"payout_entries[0].gross_amount_money.amount", 1},
		{"charge without payment", `{"payout_entries":[{"id":"poe_1","payout_id":"po_1","effective_at":"2026-11-29T12:01:02Z","type":"CHARGE","gross_amount_money":{"amount":1,"currency":"USD"}}]}`,
			"payout_entries[0].type_charge_details", 1},
		{"unknown currency", `{"payout_entries":[{"id":"poe_1","payout_id":"po_1","effective_at":"2026-11-29T12:01:02Z","type":"OTHER","gross_amount_money":{"amount":1,"currency":"XPT"}}]}`,
			"payout_entries[0].gross_amount_money.currency", 1},
		{"not an object", `[]`, "", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseEntries(t, c.body)
			var pe *report.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.line, pe.Line, err.Error())
			assert.Equal(t, c.column, pe.Column, err.Error())
		})
	}
}
