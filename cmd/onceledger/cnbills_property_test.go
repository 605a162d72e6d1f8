package main_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// Generated bills of Alipay and WeChat Pay against a reference model of the
// money: the generator writes each day's trade bill and account (fund-flow)
// bill from the format rules (docs/reference.md, docs/settlement.md), the
// model is plain sums over the generated facts, written here with no code
// of the importers or the domain. The bills are imported day by day, the
// two bills of a day in either order, then every file again (duplicates);
// the ledger must equal the model: fee accounts the bills' fee totals, the
// provider balance the running balance at each day's withdrawal (less the
// opening balance), a missing_webhook for each trade and refund (these
// bills arrive with no notification: the webhook path of both providers is
// not wired on this branch, so none is sent).

// cnFact is one generated movement.
type cnFact struct {
	kind          string // "capture", "refund", "withdrawal"
	trade, refund string
	amount        int64 // fen, positive
	fee5          int64 // WeChat: the fee in 10^-5 yuan, as printed; Alipay: fee fen × 1000
	at            time.Time
}

// cnModel is the reference: sums over the facts.
type cnModel struct {
	sales, refunds, fees, paid int64
	opening                    int64
	closing                    []int64 // the running balance after each day's withdrawal
	missing                    []string
}

// modelFee is a fee in fen: Alipay prints fen; WeChat's 5 decimals round
// half up to the fen (a float is exact enough for these magnitudes).
func modelFee(f cnFact, wechat bool) int64 {
	if !wechat {
		return f.fee5 / 1000
	}
	sign := 1.0
	if f.fee5 < 0 {
		sign = -1
	}
	return int64(sign * math.Floor(math.Abs(float64(f.fee5))/1000+0.5))
}

// cnDays generates days of trades: captures, partial refunds of some,
// and one withdrawal at the end of each day.
func cnDays(r *rand.Rand, provider string, days, trades int) ([][]cnFact, *cnModel) {
	m := &cnModel{opening: 50000 + r.Int64N(100000)}
	bal := m.opening
	wechat := provider == "wechatpay"
	out := make([][]cnFact, days)
	for d := range days {
		at := time.Date(2026, 11, 1+d, 9, 0, 0, 0, time.UTC)
		for i := range trades {
			at = at.Add(time.Duration(1+r.IntN(600)) * time.Second)
			amount := 1 + r.Int64N(50000)
			fee5 := amount * 6 // 0.6%, in 10^-5 yuan
			if !wechat {
				fee5 = (amount * 6 / 1000) * 1000 // Alipay prints whole fen
			}
			c := cnFact{kind: "capture", trade: fmt.Sprintf("%s%02d%04d", cnTradePrefix(provider), d, i), amount: amount, fee5: fee5, at: at}
			out[d] = append(out[d], c)
			m.sales += amount
			m.fees += modelFee(c, wechat)
			bal += amount - modelFee(c, wechat)
			m.missing = append(m.missing, c.trade)
			if r.IntN(3) == 0 {
				at = at.Add(time.Minute)
				part := 1 + r.Int64N(amount)
				rf := cnFact{kind: "refund", trade: c.trade, refund: c.trade + "R1", amount: part, fee5: -fee5 * part / amount, at: at}
				if !wechat {
					rf.fee5 = -(fee5 / 1000 * part / amount) * 1000
				}
				out[d] = append(out[d], rf)
				m.refunds += part
				m.fees += modelFee(rf, wechat)
				bal += -part - modelFee(rf, wechat)
				m.missing = append(m.missing, rf.refund)
			}
		}
		w := cnFact{kind: "withdrawal", trade: fmt.Sprintf("W%s%02d", cnTradePrefix(provider), d), amount: 1 + r.Int64N(bal), at: at.Add(time.Hour)}
		out[d] = append(out[d], w)
		m.paid += w.amount
		bal -= w.amount
		m.closing = append(m.closing, bal)
	}
	sort.Strings(m.missing)
	return out, m
}

func cnTradePrefix(provider string) string {
	if provider == "alipay" {
		return "20261101220014684505"
	}
	return "42000020261101000000"
}

func yuan(fen int64) string {
	sign := ""
	if fen < 0 {
		sign, fen = "-", -fen
	}
	return fmt.Sprintf("%s%d.%02d", sign, fen/100, fen%100)
}

func beijingTime(t time.Time) string {
	return t.In(time.FixedZone("CST", 8*3600)).Format("2006-01-02 15:04:05")
}

// alipayBills writes one day's trade bill and account bill, GBK, balance
// carried from bal.
func alipayBills(t *testing.T, day []cnFact, bal int64) (trade, account []byte, end int64) {
	var tb, ab strings.Builder
	tb.WriteString("#支付宝业务明细查询\n#-----------------------------------------业务明细列表----------------------------------------\n")
	tb.WriteString("支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,订单金额（元）,商家实收（元）,商家优惠（元）,退款批次号/请求号,服务费（元）,备注\n")
	ab.WriteString("#支付宝账务明细查询\n#-----------------------------------------账务明细列表----------------------------------------\n")
	ab.WriteString("账务流水号,业务流水号,商户订单号,商品名称,发生时间,对方账号,收入金额（+元）,支出金额（-元）,账户余额（元）,交易渠道,业务类型,备注\n")
	var nt, nr int
	var st, sr int64
	flow := 0
	row := func(in, out int64, typ, ref string, at time.Time) {
		if in == 0 && out == 0 {
			return // a fee of nothing has no row
		}
		flow++
		bal += in - out
		inS, outS := "", ""
		if in != 0 {
			inS = yuan(in)
		}
		if out != 0 {
			outS = yuan(-out)
		}
		fmt.Fprintf(&ab, "%s%04d\t,%s\t,\t,\t,%s\t,\t,%s\t,%s\t,%s\t,支付宝\t,%s\t,\n", ref, flow, ref, beijingTime(at), inS, outS, yuan(bal), typ)
	}
	for _, f := range day {
		ts := beijingTime(f.at)
		switch f.kind {
		case "capture":
			nt++
			st += f.amount
			fmt.Fprintf(&tb, "%s\t,O%s\t,交易\t,商品\t,%s\t,%s\t,%s\t,%s\t,0.00\t,\t,%s\t,\n", f.trade, f.trade, ts, ts, yuan(f.amount), yuan(f.amount), yuan(-f.fee5/1000))
			row(f.amount, 0, "在线支付", f.trade, f.at)
			row(0, f.fee5/1000, "收费", f.trade, f.at)
		case "refund":
			nr++
			sr -= f.amount
			fmt.Fprintf(&tb, "%s\t,O%s\t,退款\t,商品\t,%s\t,%s\t,%s\t,%s\t,0.00\t,%s\t,%s\t,\n", f.trade, f.trade, ts, ts, yuan(f.amount), yuan(-f.amount), f.refund, yuan(-f.fee5/1000))
			row(0, f.amount, "交易退款", f.trade, f.at)
			row(-f.fee5/1000, 0, "收费", f.trade, f.at)
		case "withdrawal":
			row(0, f.amount, "提现", f.trade, f.at)
		}
	}
	tb.WriteString("#-----------------------------------------业务明细列表结束------------------------------------\n")
	fmt.Fprintf(&tb, "#交易合计：%d笔，商家实收共%s元，商家优惠共0.00元\n#退款合计：%d笔，商家实收共%s元，商家优惠共0.00元\n", nt, yuan(st), nr, yuan(sr))
	ab.WriteString("#-----------------------------------------账务明细列表结束------------------------------------\n")
	enc := func(s string) []byte {
		b, err := simplifiedchinese.GBK.NewEncoder().String(s)
		require.NoError(t, err)
		return []byte(b)
	}
	return enc(tb.String()), enc(ab.String()), bal
}

func fee5Text(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%05d", sign, v/100000, v%100000)
}

// wechatBills writes one day's trade bill (ALL) and fund-flow bill,
// backtick-prefixed, UTF-8 with BOM, balance carried from bal.
func wechatBills(day []cnFact, bal int64) (trade, fund []byte, end int64) {
	bt := func(cells ...string) string { return "`" + strings.Join(cells, ",`") + "\r\n" }
	var tb, fb strings.Builder
	tb.WriteString("\uFEFF交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\r\n")
	fb.WriteString("\uFEFF记账时间,微信支付业务单号,资金流水单号,业务名称,业务类型,收支类型,收支金额(元),账户结余(元),资金变更提交申请人,备注,业务凭证号\r\n")
	var n, nIn, nOut int
	var settled, refunded, fee5, in, out int64
	flow := 0
	row := func(v int64, name, ref string, at time.Time) {
		if v == 0 {
			return
		}
		flow++
		bal += v
		dir := "收入"
		if v < 0 {
			dir, v = "支出", -v
			nOut++
			out += v
		} else {
			nIn++
			in += v
		}
		fb.WriteString(bt(beijingTime(at), ref, fmt.Sprintf("%s%03d", ref, flow), name, name, dir, yuan(v), yuan(bal), "system", "", ""))
	}
	for _, f := range day {
		ts := beijingTime(f.at)
		fee := int64(math.Floor(math.Abs(float64(f.fee5))/1000 + 0.5))
		switch f.kind {
		case "capture":
			n++
			settled += f.amount
			fee5 += f.fee5
			tb.WriteString(bt(ts, "wx2421b1c4370ec43b", "1230000109", "0", "", f.trade, "O"+f.trade, "oUpF8uMu", "JSAPI", "SUCCESS", "OTHERS", "CNY",
				yuan(f.amount), "0.00", "0", "0", "0.00", "0.00", "", "", "商品", "", fee5Text(f.fee5), "0.60%", yuan(f.amount), "0.00", ""))
			row(f.amount, "交易", f.trade, f.at)
			row(-fee, "扣除交易手续费", f.trade, f.at)
		case "refund":
			n++
			refunded += f.amount
			fee5 += f.fee5
			tb.WriteString(bt(ts, "wx2421b1c4370ec43b", "1230000109", "0", "", f.trade, "O"+f.trade, "oUpF8uMu", "JSAPI", "REFUND", "OTHERS", "CNY",
				"0.00", "0.00", f.refund, "O"+f.refund, yuan(f.amount), "0.00", "ORIGINAL", "SUCCESS", "商品", "", fee5Text(f.fee5), "0.60%", "0.00", yuan(f.amount), ""))
			row(-f.amount, "退款", f.refund, f.at)
			row(fee, "退还交易手续费", f.refund, f.at)
		case "withdrawal":
			row(-f.amount, "提现", f.trade, f.at)
		}
	}
	tb.WriteString("总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\r\n")
	tb.WriteString(bt(fmt.Sprint(n), yuan(settled), yuan(refunded), "0.00", fee5Text(fee5), yuan(settled), yuan(refunded)))
	fb.WriteString("资金流水总笔数,收入笔数,收入金额,支出笔数,支出金额\r\n")
	fb.WriteString(bt(fmt.Sprint(nIn+nOut), fmt.Sprint(nIn), yuan(in), fmt.Sprint(nOut), yuan(out)))
	return []byte(tb.String()), []byte(fb.String()), bal
}

func TestGeneratedChineseBillsCloseTheBooks(t *testing.T) {
	for _, provider := range []string{"alipay", "wechatpay"} {
		t.Run(provider, func(t *testing.T) {
			s := settleStack(t, onPostgres) // one ledger per provider: bank:payouts is shared
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			r := rand.New(rand.NewPCG(seed, 25))
			days, m := cnDays(r, provider, 3, 12)
			bal := m.opening
			var files [][]byte
			for d, day := range days {
				var trade, account []byte
				if provider == "alipay" {
					trade, account, bal = alipayBills(t, day, bal)
				} else {
					trade, account, bal = wechatBills(day, bal)
				}
				require.Equal(t, m.closing[d], bal, "the generator's running balance is the model's")
				pair := [][]byte{trade, account}
				if d%2 == 1 {
					pair = [][]byte{account, trade} // interleaved: the balance holds once both are in
				}
				for _, f := range pair {
					ans := s.v1(http.MethodPost, "/v1/settlements/"+provider, f)
					require.Equal(t, http.StatusOK, ans.Status, ans.Body)
				}
				files = append(files, pair...)
				want := m.closing[d] - m.opening
				require.Eventually(t, func() bool { return s.readBalances()["provider:"+provider+":balance|CNY"] == want },
					30*time.Second, 100*time.Millisecond, "day %d: provider balance %d, want the bill's %d", d, s.readBalances()["provider:"+provider+":balance|CNY"], want)
			}
			for _, f := range files { // every file again: nothing new
				ans := s.v1(http.MethodPost, "/v1/settlements/"+provider, f)
				require.Equal(t, http.StatusOK, ans.Status, ans.Body)
				assert.Contains(t, ans.Body, `"new":0`)
			}
			checkChineseModel(t, s, provider, m)
		})
	}
}

func checkChineseModel(t *testing.T, s *stack, provider string, m *cnModel) {
	t.Helper()
	s.projectedToHead()
	b := s.readBalances()
	assert.Equal(t, m.fees, b["expenses:fees:"+provider+"|CNY"], "the fee account is the bills' fee total")
	assert.Equal(t, m.paid, b["bank:payouts|CNY"], "withdrawals paid out")
	assert.Equal(t, m.sales-m.refunds-m.fees-m.paid, b["provider:"+provider+":balance|CNY"])
	require.Eventually(t, func() bool { return equalStrings(s.openItems("missing_webhook"), m.missing) },
		30*time.Second, 100*time.Millisecond, "missing_webhook %v, want %v", s.openItems("missing_webhook"), m.missing)
	assert.Empty(t, s.openItems("settlement_mismatch"))
}

// A running balance that does not follow from the rows opens
// settlement_mismatch naming the row, and posts nothing.
func TestBillBalanceGapOpensSettlementMismatch(t *testing.T) {
	s := settleStack(t, onPostgres)
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "samples", "wechatpay_fundflowbill_20261130.csv"))
	require.NoError(t, err)
	gap := bytes.Replace(raw, []byte("`1124.95,"), []byte("`1124.90,"), 1)
	ans := s.v1(http.MethodPost, "/v1/settlements/wechatpay", gap)
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	want := []string{"settle:balance-gap:4200002026113000000000000002001", "settle:balance-gap:4200002026113000000000000002002"}
	require.Eventually(t, func() bool { return equalStrings(s.openItems("settlement_mismatch"), want) },
		30*time.Second, 100*time.Millisecond, "settlement_mismatch %v", s.openItems("settlement_mismatch"))
	s.projectedToHead()
	assert.Equal(t, map[string]int64{"bank:payouts|CNY": 100000, "provider:wechatpay:balance|CNY": -100000}, s.readBalances(),
		"only the withdrawal posts")
}
