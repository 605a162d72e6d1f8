package adyen

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

func parseAdyen(t *testing.T, data string, opt report.Options) ([]report.Record, error) {
	t.Helper()
	return providertest.ParseReport(ParseSettlement, data, opt)
}

func TestParseSettlementDetails(t *testing.T) {
	data, err := os.ReadFile("testdata/settlement/settlement_detail_report_batch_41.csv")
	require.NoError(t, err)
	recs, err := parseAdyen(t, string(data), report.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 8)

	settled := recs[0].Line
	assert.Equal(t, settlement.Line{
		Provider: "adyen", Kind: settlement.KindCharge, SourceType: "Settled", LineID: "LWX3JCWDNRRBNZ65",
		Key:        "OnceLedgerECOM|41|Settled|QFQTPCQ8HXSKGK82|LWX3JCWDNRRBNZ65|EUR",
		PaymentKey: "QFQTPCQ8HXSKGK82", CaptureID: "LWX3JCWDNRRBNZ65",
		Gross: 1000, Fee: 26, Net: 974, Currency: "EUR", OriginalAmount: 1000, OriginalCurrency: "EUR", ExchangeRate: "1",
		PayoutID:   "OnceLedgerECOM/41/EUR",
		OccurredAt: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
	}, settled)
	var raw map[string]string
	require.NoError(t, json.Unmarshal(recs[0].Raw, &raw))
	assert.Equal(t, "9.74", raw["Net Credit (NC)"])

	refund := recs[1].Line
	assert.Equal(t, settlement.KindRefund, refund.Kind)
	assert.Equal(t, "V4HZ4RBFJGXXGN82", refund.RefundID)
	assert.Equal(t, []int64{-250, 0, -250}, []int64{refund.Gross, refund.Fee, refund.Net})

	cb := recs[2].Line
	assert.Equal(t, settlement.KindDispute, cb.Kind)
	assert.Equal(t, "DZ4DPSHB4WD2WN82", cb.DisputeID)
	assert.Equal(t, []int64{-1000, 750, -1750}, []int64{cb.Gross, cb.Fee, cb.Net}, "net debit = gross debit × rate + fees")

	fx := recs[3].Line
	assert.Equal(t, []int64{3860, 50, 3810}, []int64{fx.Gross, fx.Fee, fx.Net})
	assert.Equal(t, int64(6500), fx.OriginalAmount)
	assert.Equal(t, money.Currency("NZD"), fx.OriginalCurrency)
	assert.Equal(t, "0.593846153846154", fx.ExchangeRate)

	fee := recs[4].Line
	assert.Equal(t, settlement.KindFee, fee.Kind)
	assert.Equal(t, int64(-12), fee.Net)
	assert.Empty(t, fee.PaymentKey)

	payout := recs[5].Line
	assert.Equal(t, settlement.KindPayout, payout.Kind)
	assert.True(t, payout.NoWebhook)
	assert.Equal(t, int64(-2772), payout.Gross)
	var sum int64
	for _, r := range recs {
		if r.Line.Currency == "EUR" && r.Line.Kind != settlement.KindPayout {
			sum += r.Line.Net
		}
	}
	assert.Equal(t, -payout.Net, sum, "the EUR lines add up to the EUR payout")

	gbp := recs[6].Line
	assert.Equal(t, []int64{500, 12, 488}, []int64{gbp.Gross, gbp.Fee, gbp.Net})
	assert.Equal(t, "8815329842815468", gbp.CaptureID, "automatic capture: the payment's own reference")
	assert.Equal(t, "OnceLedgerECOM/41/GBP", recs[7].Line.PayoutID)
	assert.NotEqual(t, recs[5].Line.DedupKey(), recs[7].Line.DedupKey())
}

// The report's ids are the webhook adapter's: payment key and business id.
func TestSettlementIDsMatchWebhooks(t *testing.T) {
	data, err := os.ReadFile("testdata/settlement/settlement_detail_report_batch_41.csv")
	require.NoError(t, err)
	recs, err := parseAdyen(t, string(data), report.Options{})
	require.NoError(t, err)
	byID := map[string]settlement.Line{}
	for _, r := range recs {
		byID[r.Line.BusinessID()] = r.Line
	}
	for _, f := range []string{"testdata/lifecycle.json", "testdata/disputes.json"} {
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		items, err := decodeBatch(body)
		require.NoError(t, err)
		for _, it := range items {
			ev, err := normalize(it)
			require.NoError(t, err)
			for _, fact := range ev.Facts {
				if l, ok := byID[fact.BusinessID]; ok && fact.BusinessID != "" {
					assert.Equal(t, ev.PaymentKey, l.PaymentKey, fact.BusinessID)
				}
			}
		}
	}
	for _, id := range []string{"LWX3JCWDNRRBNZ65", "V4HZ4RBFJGXXGN82", "DZ4DPSHB4WD2WN82"} {
		assert.Contains(t, byID, id)
	}
}

func TestParseSettlementMalformed(t *testing.T) {
	head := "Merchant Account,Psp Reference,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Batch Number\n"
	ok := "M,P1,2026-11-29 11:00:00,CET,Settled,C1,EUR,,10.00,EUR,,9.74,0.26,41\n"
	for _, c := range []struct {
		name, body, column string
		line               int
	}{
		{"bad credit", ok + "M,P2,2026-11-29 11:00:00,CET,Settled,C2,EUR,,10.0.0,EUR,,9.74,0.26,41\n", "Gross Credit (GC)", 3},
		{"signed amount", ok + "M,P2,2026-11-29 11:00:00,CET,Settled,C2,EUR,,10.00,EUR,,-9.74,0.26,41\n", "Net Credit (NC)", 3},
		{"unknown currency", ok + "M,P2,2026-11-29 11:00:00,CET,Settled,C2,EUR,,10.00,EUX,,9.74,0.26,41\n", "Net Currency", 3},
		{"no psp reference", ok + "M,,2026-11-29 11:00:00,CET,Refunded,C2,EUR,1.00,,EUR,1.00,,,41\n", "Psp Reference", 3},
		{"bad date", ok + "M,P2,29/11/2026,CET,Settled,C2,EUR,,10.00,EUR,,9.74,0.26,41\n", "Creation Date", 3},
		{"empty type", ok + "M,P2,2026-11-29 11:00:00,CET,,C2,EUR,,10.00,EUR,,9.74,0.26,41\n", "Type", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseAdyen(t, head+c.body, report.Options{})
			var pe *report.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.line, pe.Line, err.Error())
			assert.Equal(t, c.column, pe.Column, err.Error())
		})
	}
	_, err := parseAdyen(t, "Psp Reference,Type,Creation Date,Net Currency\n", report.Options{})
	var pe *report.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Batch Number", pe.Column)
	// The batch from the file name stands in for the column.
	recs, err := parseAdyen(t, "Psp Reference,Type,Creation Date,Net Currency,Net Debit (NC)\n,MerchantPayout,2026-12-01 10:00:00,EUR,1.00\n", report.Options{PayoutID: "7"})
	require.NoError(t, err)
	assert.Equal(t, "7/EUR", recs[0].Line.PayoutID)
}

func TestParseSettlementWithoutNetColumns(t *testing.T) {
	in := "Psp Reference,Type,Creation Date,Modification Reference,Gross Currency,Gross Credit (GC),Gross Debit (GC),Interchange (NC),Batch Number,Unknown\n" +
		"P1,Settled,2026-11-29 11:00:00,C1,USD,10.00,,0.20,3,x\n"
	recs, err := parseAdyen(t, in, report.Options{})
	require.NoError(t, err)
	assert.Equal(t, []int64{1000, 20, 980}, []int64{recs[0].Line.Gross, recs[0].Line.Fee, recs[0].Line.Net})
}

func TestParseSettlementStreams(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("Psp Reference,Type,Creation Date,Modification Reference,Gross Currency,Gross Credit (GC),Net Currency,Net Credit (NC),Batch Number\n")
	for i := range 1000 {
		b.WriteString("P,Settled,2026-11-29 11:00:00,C")
		b.WriteString(strings.Repeat("x", i%5))
		b.WriteString(",EUR,1.00,EUR,1.00,1\n")
	}
	n := 0
	require.NoError(t, ParseSettlement(&b, report.Options{}, func(report.Record) error { n++; return nil }))
	assert.Equal(t, 1000, n)
}
