package stripe

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

func collect(t *testing.T, parse func(*bytes.Reader, report.Options, report.Func) error, data []byte, opt report.Options) ([]report.Record, error) {
	t.Helper()
	var out []report.Record
	err := parse(bytes.NewReader(data), opt, func(r report.Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

func parseCSV(r *bytes.Reader, o report.Options, fn report.Func) error { return ParseReport(r, o, fn) }
func parseJSON(r *bytes.Reader, o report.Options, fn report.Func) error {
	return ParseBalanceTransactions(r, o, fn)
}
func parseAny(r *bytes.Reader, o report.Options, fn report.Func) error {
	return ParseSettlement(r, o, fn)
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/settlement/" + name)
	require.NoError(t, err)
	return b
}

func TestParseReportLines(t *testing.T) {
	recs, err := collect(t, parseCSV, readFixture(t, "payout_reconciliation.itemized.5.csv"), report.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 6)

	charge := recs[0].Line
	assert.Equal(t, settlement.Line{
		Provider: "stripe", Kind: settlement.KindCharge, SourceType: "charge", LineID: "txn_3QxYzA2eZvKYlo2C1bT0xAbC",
		PaymentKey: "pi_3QxYzA2eZvKYlo2C1PJqQe7b", CaptureID: "ch_3QxYzA2eZvKYlo2C1kTq9v0W",
		Gross: 2000, Fee: 88, Net: 1912, Currency: "USD", OriginalAmount: 2000, OriginalCurrency: "USD",
		PayoutID:   "po_1QzPoU2eZvKYlo2CxPaYoUt1",
		OccurredAt: time.Date(2026, 11, 29, 9, 59, 59, 0, time.UTC), AvailableOn: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	}, charge)
	assert.Equal(t, 2, recs[0].Pos)
	assert.Equal(t, "settle:txn_3QxYzA2eZvKYlo2C1bT0xAbC", charge.DedupKey())
	assert.Contains(t, string(recs[0].Raw), `"gross":"20.00"`)

	refund := recs[1].Line
	assert.Equal(t, settlement.KindRefund, refund.Kind)
	assert.Equal(t, "re_3QxYzA2eZvKYlo2C1pEnDiNg", refund.RefundID)
	assert.Equal(t, "ch_3QxYzA2eZvKYlo2C1kTq9v0W", refund.CaptureID)
	assert.Equal(t, int64(-100), refund.Gross)
	assert.Equal(t, int64(-100), refund.OriginalAmount, "customer_facing_amount takes gross's sign")

	dispute := recs[2].Line
	assert.Equal(t, settlement.KindDispute, dispute.Kind)
	assert.Equal(t, "du_1QyAbC2eZvKYlo2CdIsPuTe1", dispute.DisputeID)
	assert.Equal(t, []int64{-2000, 1500, -3500}, []int64{dispute.Gross, dispute.Fee, dispute.Net})

	fx := recs[3].Line
	assert.Equal(t, []int64{1234, 66, 1168}, []int64{fx.Gross, fx.Fee, fx.Net})
	assert.Equal(t, money.Currency("USD"), fx.Currency)
	assert.Equal(t, int64(1000), fx.OriginalAmount)
	assert.Equal(t, money.Currency("EUR"), fx.OriginalCurrency)

	fee := recs[4].Line
	assert.Equal(t, settlement.KindFee, fee.Kind)
	assert.Empty(t, fee.PaymentKey)
	assert.Equal(t, int64(-5), fee.Net)

	legacy := recs[5].Line
	assert.Equal(t, "ch_1RcLeGaCy2eZvKYlo2CjPy001", legacy.PaymentKey, "a charge without a PaymentIntent is keyed by the charge, as the webhooks key it")
	assert.Equal(t, []int64{1000, 36, 964}, []int64{legacy.Gross, legacy.Fee, legacy.Net})
	assert.Equal(t, money.Currency("JPY"), legacy.Currency)
}

// The report's ids are the ones the webhook normalizer gives the same
// payment, capture, refund and dispute.
func TestReportIDsMatchWebhooks(t *testing.T) {
	recs, err := collect(t, parseCSV, readFixture(t, "payout_reconciliation.itemized.5.csv"), report.Options{})
	require.NoError(t, err)
	for _, c := range []struct {
		webhook string
		line    settlement.Line
	}{
		{"charge.succeeded.json", recs[0].Line},
		{"refund.updated.json", recs[1].Line},
		{"charge.dispute.created.json", recs[2].Line},
	} {
		raw, err := os.ReadFile("testdata/" + c.webhook)
		require.NoError(t, err)
		ev, err := normalize(raw)
		require.NoError(t, err)
		require.Len(t, ev.Facts, 1, c.webhook)
		assert.Equal(t, ev.PaymentKey, c.line.PaymentKey, c.webhook)
		assert.Equal(t, ev.Facts[0].BusinessID, c.line.BusinessID(), c.webhook)
	}
	raw, err := os.ReadFile("testdata/payout.paid.json")
	require.NoError(t, err)
	ev, err := normalize(raw)
	require.NoError(t, err)
	assert.Equal(t, ev.Facts[0].BusinessID, recs[0].Line.PayoutID)
	assert.Equal(t, delivery.KindPayoutPaid, ev.Facts[0].Kind)
}

func TestParseReportUnknownColumnsAnyOrder(t *testing.T) {
	in := "payment_metadata[x],net,fee,gross,currency,reporting_category,balance_transaction_id,created_utc,surprise,source_id\n" +
		"a,-7.50,0.00,-7.50,EUR,payout,txn_po1,2026-12-01 00:00:00,b,po_1\n"
	recs, err := collect(t, parseCSV, []byte(in), report.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	l := recs[0].Line
	assert.Equal(t, settlement.KindPayout, l.Kind)
	assert.Equal(t, int64(-750), l.Net)
	assert.Equal(t, money.Currency("EUR"), l.Currency)
}

func TestParseReportDecimalComma(t *testing.T) {
	// The CSV stays comma-separated; only the amounts' separator changes.
	csv := "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,payment_intent_id\n" +
		`txn_1,2026-12-01 00:00:00,eur,"10,50","0,30","10,20",charge,ch_1,pi_1` + "\n"
	recs, err := collect(t, parseCSV, []byte(csv), report.Options{DecimalSeparator: ','})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, []int64{1050, 30, 1020}, []int64{recs[0].Line.Gross, recs[0].Line.Fee, recs[0].Line.Net})
}

func TestParseReportMalformed(t *testing.T) {
	head := "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,payment_intent_id\n"
	ok := "txn_1,2026-12-01 00:00:00,usd,10.00,0.30,9.70,charge,ch_1,pi_1\n"
	for _, c := range []struct {
		name, body string
		line       int
		column     string
	}{
		{"amount with too many decimals", ok + "txn_2,2026-12-01 00:00:00,usd,10.001,0.30,9.70,charge,ch_2,pi_2\n", 3, "gross"},
		{"net is not gross minus fee", ok + "txn_2,2026-12-01 00:00:00,usd,10.00,0.30,9.00,charge,ch_2,pi_2\n", 3, "net"},
		{"unknown currency", ok + "txn_2,2026-12-01 00:00:00,usd,10.00,0.30,9.70,charge,ch_2,pi_2\ntxn_3,2026-12-01 00:00:00,xyz,1,0,1,charge,ch_3,pi_3\n", 4, "currency"},
		{"bad date", ok + "txn_2,yesterday,usd,10.00,0.30,9.70,charge,ch_2,pi_2\n", 3, "created_utc"},
		{"empty id", ",2026-12-01 00:00:00,usd,10.00,0.30,9.70,charge,ch_2,pi_2\n", 2, "balance_transaction_id"},
		{"amount beyond 10^15", "txn_2,2026-12-01 00:00:00,usd,10000000000000.01,0,10000000000000.01,charge,ch_2,pi_2\n", 2, "gross"},
		{"bare quote", ok + "txn_2,2026-12-01 00:00:00,usd,\"10.00,0.30,9.70,charge,ch_2,pi_2\n", 3, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := collect(t, parseCSV, []byte(head+c.body), report.Options{})
			var pe *report.ParseError
			require.ErrorAs(t, err, &pe)
			assert.ErrorIs(t, err, report.ErrMalformed)
			assert.Equal(t, c.line, pe.Line, err.Error())
			if c.column != "" {
				assert.Equal(t, c.column, pe.Column, err.Error())
			}
		})
	}
	t.Run("missing column", func(t *testing.T) {
		_, err := collect(t, parseCSV, []byte("balance_transaction_id,created_utc,currency,gross,fee,reporting_category\n"), report.Options{})
		var pe *report.ParseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, 1, pe.Line)
		assert.Equal(t, "net", pe.Column)
	})
}

func TestParseBalanceTransactions(t *testing.T) {
	recs, err := collect(t, parseAny, readFixture(t, "balance_transactions.json"), report.Options{PayoutID: "po_1QzPoU2eZvKYlo2CxPaYoUt1"})
	require.NoError(t, err)
	require.Len(t, recs, 4)
	csv, err := collect(t, parseAny, readFixture(t, "payout_reconciliation.itemized.5.csv"), report.Options{})
	require.NoError(t, err)

	// The same balance transaction from the API and from the report is the
	// same delivery with the same facts.
	assert.Equal(t, csv[0].Line.DedupKey(), recs[0].Line.DedupKey())
	assert.Equal(t, csv[0].Line.FactsHash(), recs[0].Line.FactsHash())
	assert.Equal(t, csv[0].Line.PayoutID, recs[0].Line.PayoutID)
	assert.Equal(t, csv[3].Line.FactsHash(), recs[1].Line.FactsHash())
	assert.Equal(t, csv[1].Line.FactsHash(), recs[2].Line.FactsHash())

	fx := recs[1].Line
	assert.Equal(t, "1.234", fx.ExchangeRate)
	assert.Equal(t, int64(1000), fx.OriginalAmount)
	assert.Equal(t, money.Currency("EUR"), fx.OriginalCurrency)
	assert.Equal(t, 31, recs[1].Pos)

	po := recs[3].Line
	assert.Equal(t, settlement.KindPayout, po.Kind)
	assert.Equal(t, "po_1QzPoU2eZvKYlo2CxPaYoUt1", po.PayoutID)
	assert.Equal(t, int64(-1811), po.Net)
}

func TestParseBalanceTransactionsMalformed(t *testing.T) {
	for _, c := range []struct {
		name, body, column string
		line               int
	}{
		{"source not expanded", `{"data":[
{"id":"txn_1","amount":100,"fee":0,"net":100,"currency":"usd","created":1764410399,"reporting_category":"charge","source":"ch_1"}]}`, "data[0].source", 2},
		{"net mismatch", `{"data":[{"id":"txn_1","amount":-100,"fee":0,"net":-90,"currency":"usd","created":1764410399,"reporting_category":"payout","source":"po_1"}]}`, "data[0].net", 1},
		{"ISK not divisible by 100", `{"data":[{"id":"txn_1","amount":-150,"fee":0,"net":-150,"currency":"isk","created":1764410399,"reporting_category":"payout","source":"po_1"}]}`, "data[0].amount", 1},
		{"truncated", `{"data":[{"id":"txn_1"`, "", 1},
		{"data not a list", `{"data":{}}`, "data", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := collect(t, parseJSON, []byte(c.body), report.Options{})
			var pe *report.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.line, pe.Line, err.Error())
			assert.Equal(t, c.column, pe.Column, err.Error())
		})
	}
}

func TestAPIUnits(t *testing.T) {
	for _, c := range []struct {
		in   string
		cur  money.Currency
		want int64
	}{{"1000", "USD", 1000}, {"1000", "JPY", 1000}, {"-15000", "ISK", -150}, {"5", "MGA", 500}, {"1234", "KWD", 1234}} {
		got, err := apiToISO(c.in, c.cur)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "%s %s", c.in, c.cur)
	}
	for _, in := range []string{"6.3e-05", "1.234", "1E2"} {
		s, err := plainDecimal(in)
		require.NoError(t, err)
		assert.True(t, settlement.IsDecimal(s), s)
	}
	s, _ := plainDecimal("6.3e-05")
	assert.Equal(t, "0.000063", s)
}

func TestParseStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	err := ParseSettlement(strings.NewReader(string(readFixture(t, "payout_reconciliation.itemized.5.csv"))), report.Options{},
		func(report.Record) error { return stop })
	assert.ErrorIs(t, err, stop)
}

// TestReportWithoutPaymentIntentColumnIsRefused (issue 24, item 2): a
// report whose columns leave out payment_intent_id cannot link a charge to
// the stream its webhooks feed (payment-stripe-pi_…): keyed by the charge,
// it would book the capture a second time. It is refused, naming the
// column; fee-only files (no payment) still import.
func TestReportWithoutPaymentIntentColumnIsRefused(t *testing.T) {
	head := "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,automatic_payout_id\n"
	err := ParseReport(strings.NewReader(head+"txn_1,2026-11-29 10:00:00,usd,10.00,0.59,9.41,charge,ch_1,ch_1,po_1\n"), report.Options{},
		func(report.Record) error { return nil })
	var pe *report.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "payment_intent_id", pe.Column)
	assert.Equal(t, 2, pe.Line)
	require.ErrorIs(t, err, report.ErrMalformed)

	n := 0
	err = ParseReport(strings.NewReader(head+"txn_2,2026-11-29 10:00:00,usd,-0.05,0.00,-0.05,fee,,,po_1\n"), report.Options{},
		func(report.Record) error { n++; return nil })
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}
