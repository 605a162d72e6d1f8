package alipay

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/settlement"
)

// readBill returns a testdata bill as UTF-8 text, for editing.
func readBill(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/bill/" + name)
	require.NoError(t, err)
	s, err := simplifiedchinese.GBK.NewDecoder().Bytes(b)
	require.NoError(t, err)
	return string(s)
}

// gbk encodes an edited bill back as Alipay writes it.
func gbk(t *testing.T, s string) string {
	t.Helper()
	b, err := simplifiedchinese.GBK.NewEncoder().String(s)
	require.NoError(t, err)
	return b
}

func parseBillFile(t *testing.T, name string) []report.Record {
	t.Helper()
	b, err := os.ReadFile("testdata/bill/" + name)
	require.NoError(t, err)
	recs, err := providertest.ParseReport(ParseSettlement, string(b), report.Options{})
	require.NoError(t, err)
	return recs
}

func TestTradeBill(t *testing.T) {
	recs := parseBillFile(t, "trade.csv")
	require.Len(t, recs, 3)
	c, c2, r := recs[0].Line, recs[1].Line, recs[2].Line
	assert.Equal(t, settlement.KindCharge, c.Kind)
	assert.Equal(t, "2026113022001468450500000001", c.PaymentKey)
	assert.Equal(t, c.PaymentKey, c.CaptureID, "the capture is the trade, as the webhooks name it")
	assert.Equal(t, []int64{10000, 60, 9940}, []int64{c.Gross, c.Fee, c.Net}, "服务费 -0.60 is a fee charged")
	assert.Equal(t, "settle:trade:2026113022001468450500000001", c.DedupKey())
	assert.Equal(t, cst("2026-11-30 09:12:05"), c.OccurredAt)
	assert.Equal(t, 6, recs[0].Pos)
	assert.Equal(t, []int64{2550, 15, 2535}, []int64{c2.Gross, c2.Fee, c2.Net})
	assert.Equal(t, settlement.KindRefund, r.Kind)
	assert.Equal(t, "ORDER-1001-R1", r.RefundID, "the refund is out_biz_no (退款批次号/请求号)")
	assert.True(t, r.CumulativeRefund, "its notification reports the trade's refunded total")
	assert.Equal(t, c.PaymentKey, r.PaymentKey)
	assert.Equal(t, []int64{-3000, -18, -2982}, []int64{r.Gross, r.Fee, r.Net}, "服务费 +0.18 on a refund is a fee returned")
	assert.Contains(t, string(recs[0].Raw), "订单金额(元)")
}

func TestTradeBillZip(t *testing.T) {
	assert.Equal(t, parseBillFile(t, "trade.csv"), parseBillFile(t, "trade.csv.zip"),
		"the zip's detail file is read, not its summary")
}

func TestTradeBillUTF8(t *testing.T) {
	recs, err := providertest.ParseReport(ParseSettlement, "\uFEFF"+readBill(t, "trade.csv"), report.Options{})
	require.NoError(t, err)
	assert.Len(t, recs, 3)
}

// dax-pay's parser takes the detail file's last two lines as its trailer:
// a bill without the totals lines is read (there is nothing to check).
func TestTradeBillWithoutTotals(t *testing.T) {
	s := strings.Replace(strings.Replace(readBill(t, "trade.csv"), "#交易合计", "#备注", 1), "#退款合计", "#备注", 1)
	recs, err := providertest.ParseReport(ParseSettlement, gbk(t, s), report.Options{})
	require.NoError(t, err)
	assert.Len(t, recs, 3)
}

func TestAccountBill(t *testing.T) {
	recs := parseBillFile(t, "account.csv")
	require.Len(t, recs, 1, "only the withdrawal: the other rows are the trade bill's facts")
	p := recs[0].Line
	assert.Equal(t, settlement.KindPayout, p.Kind)
	assert.Equal(t, "20261130000000000007", p.PayoutID)
	assert.Equal(t, int64(-100000), p.Gross)
	assert.True(t, p.NoWebhook, "Alipay notifies no withdrawal")
}

func TestAccountBillGap(t *testing.T) {
	s := strings.Replace(readBill(t, "account.csv"), ",1124.90\t", ",1124.80\t", 1)
	recs, err := providertest.ParseReport(ParseSettlement, gbk(t, s), report.Options{})
	require.NoError(t, err)
	require.Len(t, recs, 3, "two gaps (the wrong balance, and the next line's from it) and the withdrawal")
	g := recs[0].Line
	assert.Equal(t, settlement.KindAdjustment, g.Kind)
	assert.Equal(t, settlement.SourceBalanceGap, g.SourceType)
	assert.Equal(t, "20261130000000000003", g.LineID)
	assert.Equal(t, int64(-10), g.Gross)
	assert.Equal(t, 8, recs[0].Pos)
	assert.Equal(t, int64(10), recs[1].Line.Gross)
}

func TestBillRefused(t *testing.T) {
	trade := readBill(t, "trade.csv")
	account := readBill(t, "account.csv")
	for _, c := range []struct {
		name, bill string
		line       int
		want       string
	}{
		{"count", strings.Replace(trade, "#交易合计：2笔", "#交易合计：3笔", 1), 10, "says 3 rows"},
		{"total", strings.Replace(trade, "商家实收共125.50元", "商家实收共125.51元", 1), 10, "rows sum to 125.50"},
		{"refund total", strings.Replace(trade, "商家实收共-30.00元", "商家实收共-31.00元", 1), 11, "rows sum to -30.00"},
		{"cut", trade[:strings.Index(trade, "#-----------------------------------------业务明细列表结束")], 8, "ends before"},
		{"cut account", account[:strings.Index(account, "#-----------------------------------------账务明细列表结束")], 12, "ends before"},
		{"amount", strings.Replace(trade, ",25.50\t", ",25.505\t", 1), 7, "订单金额"},
		{"type", strings.Replace(trade, ",交易\t,茶", ",转账\t,茶", 1), 7, "业务类型"},
		{"no marker", "#支付宝业务明细查询\n", 1, "no 明细列表"},
		{"outside", "支付宝交易号,业务类型\n", 1, "outside"},
		{"column", strings.Replace(trade, ",服务费（元）", ",手续费（元）", 1), 5, "服务费"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := providertest.ParseReport(ParseSettlement, gbk(t, c.bill), report.Options{})
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
	providertest.FuzzSettlement(f, ParseSettlement, "testdata/bill/trade.csv", "testdata/bill/account.csv")
}
