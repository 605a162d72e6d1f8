package wechatpay

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/settlement"
)

func billFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/bill/" + name)
	require.NoError(t, err)
	return string(b)
}

func TestTradeBill(t *testing.T) {
	recs, err := providertest.ParseReport(ParseSettlement, billFile(t, "tradebill.csv"), report.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 4, "REVOKED moves nothing")
	c := recs[0].Line
	assert.Equal(t, settlement.KindCharge, c.Kind)
	assert.Equal(t, "4200002026113000000000000001", c.PaymentKey)
	assert.Equal(t, c.PaymentKey, c.CaptureID, "the capture is transaction_id, as the webhooks name it")
	assert.Equal(t, []int64{10000, 60, 9940}, []int64{c.Gross, c.Fee, c.Net})
	assert.Equal(t, time.Date(2026, 11, 30, 1, 12, 5, 0, time.UTC), c.OccurredAt)
	assert.Equal(t, 2, recs[0].Pos)
	assert.Equal(t, int64(15), recs[1].Line.Fee, "0.15330 rounds to 0.15")
	r := recs[2].Line
	assert.Equal(t, settlement.KindRefund, r.Kind)
	assert.Equal(t, "50300002026113000000000000001", r.RefundID, "the refund is refund_id (微信退款单号)")
	assert.Equal(t, c.PaymentKey, r.PaymentKey)
	assert.Equal(t, []int64{-3000, -18, -2982}, []int64{r.Gross, r.Fee, r.Net}, "a negative 手续费 is a fee returned")
	assert.Equal(t, int64(1), recs[3].Line.Fee, "0.00500 rounds half up to 0.01")
	assert.NotContains(t, string(recs[0].Raw), "`")
}

func TestTradeBillGzip(t *testing.T) {
	plain, err := providertest.ParseReport(ParseSettlement, billFile(t, "tradebill.csv"), report.Options{})
	require.NoError(t, err)
	gz, err := providertest.ParseReport(ParseSettlement, billFile(t, "tradebill.csv.gz"), report.Options{})
	require.NoError(t, err)
	assert.Equal(t, plain, gz)
}

func TestFeeRounding(t *testing.T) {
	for in, want := range map[string]int64{"0.00000": 0, "0.00499": 0, "0.00500": 1, "0.01499": 1, "0.01500": 2,
		"-0.00500": -1, "-0.00499": 0, "12.34567": 1235, "0.6": 60} {
		v, err := fee5(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, roundFen(v), in)
	}
	for _, in := range []string{"0.000001", "1e3", "--1", ".5", "0x1"} {
		_, err := fee5(in)
		assert.Error(t, err, in)
	}
}

func TestFundFlowBill(t *testing.T) {
	recs, err := providertest.ParseReport(ParseSettlement, billFile(t, "fundflowbill.csv"), report.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 1, "only the withdrawal: the other rows are the trade bill's facts")
	p := recs[0].Line
	assert.Equal(t, settlement.KindPayout, p.Kind)
	assert.Equal(t, "1000002026113000000000000007001", p.PayoutID)
	assert.Equal(t, int64(-100000), p.Gross)
	assert.True(t, p.NoWebhook)
}

func TestFundFlowBillGap(t *testing.T) {
	s := strings.Replace(billFile(t, "fundflowbill.csv"), "`1124.95,", "`1124.90,", 1)
	recs, err := providertest.ParseReport(ParseSettlement, s, report.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 3)
	g := recs[0].Line
	assert.Equal(t, settlement.SourceBalanceGap, g.SourceType)
	assert.Equal(t, "4200002026113000000000000002001", g.LineID)
	assert.Equal(t, int64(-5), g.Gross)
	assert.Equal(t, 4, recs[0].Pos)
}

func TestBillRefused(t *testing.T) {
	trade, fund := billFile(t, "tradebill.csv"), billFile(t, "fundflowbill.csv")
	for _, c := range []struct {
		name, bill string
		line       int
		want       string
	}{
		{"count", strings.Replace(trade, "`5,`126.05", "`4,`126.05", 1), 8, "总交易单数"},
		{"settled total", strings.Replace(trade, "`126.05,", "`126.06,", 1), 8, "应结订单总金额"},
		{"refund total", strings.Replace(trade, "`30.00,`0.00,`0.57830", "`31.00,`0.00,`0.57830", 1), 8, "退款总金额"},
		{"fee total", strings.Replace(trade, "`0.57830", "`0.57900", 1), 8, "手续费总金额"},
		{"no summary", trade[:strings.Index(trade, "总交易单数")], 6, "ends before its summary"},
		{"fund count", strings.Replace(fund, "`9,`4", "`8,`4", 1), 12, "资金流水总笔数"},
		{"fund out", strings.Replace(fund, "`1030.76", "`1030.75", 1), 12, "支出金额"},
		{"status", strings.Replace(trade, "`NATIVE,`SUCCESS", "`NATIVE,`PAYING", 1), 3, "交易状态"},
		{"fee digits", strings.Replace(trade, "`0.15330", "`0.153301", 1), 3, "手续费"},
		{"header", "a,b\n", 1, "neither"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := providertest.ParseReport(ParseSettlement, c.bill, report.Options{})
			var pe *report.ParseError
			require.True(t, errors.As(err, &pe), "%v", err)
			assert.Equal(t, c.line, pe.Line, "%v", err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// FuzzParseBill: whatever the bytes, the bill parser never panics, fails
// only with a *report.ParseError on a line of the file, and hands on only
// valid lines (providertest.FuzzSettlement).
func FuzzParseBill(f *testing.F) {
	providertest.FuzzSettlement(f, ParseSettlement, "testdata/bill/tradebill.csv", "testdata/bill/fundflowbill.csv")
}
