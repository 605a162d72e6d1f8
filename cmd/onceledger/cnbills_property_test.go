package main_test

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/registry"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/projections"
)

// Generated bills of Alipay and WeChat Pay, with the notifications of the
// same facts, against a reference model of the money: the generator writes
// each day's trade bill and account (fund-flow) bill from the format rules
// (docs/reference.md, docs/settlement.md) and each capture's and refund's
// notification, signed as the provider signs it (webhooks_cn_e2e_test.go);
// the model is plain sums over the generated facts, written here with no
// code of the importers or the domain. Some notifications are dropped,
// some sent twice; the notifications and the bill imports are sent over
// HTTP to the served app in a random order; then every file again
// (duplicates). The ledger must equal the model: fee accounts the bills'
// fee totals, refunds the refunds made (Alipay reports them by the trade's
// cumulative refunded total, the bills by each refund's own amount), the
// provider balance the running balance at each day's withdrawal (less the
// opening balance), and a missing_webhook item for exactly each dropped
// notification's trade or refund.

// cnFact is one generated movement.
type cnFact struct {
	kind          string // "capture", "refund", "withdrawal"
	trade, refund string
	amount        int64 // fen, positive
	fee5          int64 // WeChat: the fee in 10^-5 yuan, as printed; Alipay: fee fen × 1000
	at            time.Time
	total         int64 // the trade's amount (captures and refunds)
	refunded      int64 // a refund: the trade's refunds so far, this one included (Alipay's refund_fee)
	// coupon: a capture's merchant-funded coupon (Alipay: total_amount −
	// receipt_amount; WeChat: promotion_detail NOCASH), which the provider
	// never settles; a refund's coupon money returned with it, as the
	// provider splits it (Alipay: the buyer's own money first, the coupon
	// last; WeChat, as this generator plays it: in proportion, rounded
	// down). tradeCoupon: the trade's coupon, on its refunds too.
	coupon, tradeCoupon int64
	// closed: a WeChat refund the provider closed (REFUND.CLOSED): billed
	// when initiated (退款状态 PROCESSING), no money moved.
	closed bool
}

// cnModel is the reference: sums over the facts.
type cnModel struct {
	sales, refunds, fees, paid int64
	discounts                  int64 // coupons the provider never settled, net of those refunds returned
	opening                    int64
	closing                    []int64 // the running balance after each day's withdrawal
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
			var coupon int64
			if amount > 1 && r.IntN(3) == 0 {
				coupon = 1 + r.Int64N(amount/2) // a merchant coupon: the provider settles the rest
			}
			settled := amount - coupon
			fee5 := settled * 6 // 0.6% of what is settled, in 10^-5 yuan
			if !wechat {
				fee5 = (settled * 6 / 1000) * 1000 // Alipay prints whole fen
			}
			c := cnFact{kind: "capture", trade: fmt.Sprintf("%s%02d%04d", cnTradePrefix(provider), d, i), amount: amount, fee5: fee5, at: at,
				total: amount, coupon: coupon, tradeCoupon: coupon}
			out[d] = append(out[d], c)
			m.sales += amount
			m.discounts += coupon
			m.fees += modelFee(c, wechat)
			bal += settled - modelFee(c, wechat)
			refunded, couponBack := int64(0), int64(0)
			for n := range 2 { // up to two refunds of a trade: Alipay's refund_fee grows
				if r.IntN(3) != 0 || refunded == amount {
					break
				}
				at = at.Add(time.Minute)
				part := 1 + r.Int64N(amount-refunded)
				var back int64 // the coupon money this refund returns, as the provider splits it
				if wechat {
					back = part * coupon / amount
				} else {
					back = max(0, refunded+part-settled) - max(0, refunded-settled)
				}
				merchant := part - back
				rf := cnFact{kind: "refund", trade: c.trade, refund: fmt.Sprintf("%sR%d", c.trade, n+1), amount: part,
					fee5: -fee5 * merchant / settled, at: at, total: amount, refunded: refunded + part, coupon: back, tradeCoupon: coupon}
				if !wechat {
					rf.fee5 = -(fee5 / 1000 * merchant / settled) * 1000
				}
				if wechat && r.IntN(6) == 0 {
					// Closed by WeChat: billed as initiated, nothing moved.
					rf.closed = true
					out[d] = append(out[d], rf)
					continue
				}
				refunded += part
				couponBack += back
				out[d] = append(out[d], rf)
				m.refunds += part
				m.discounts -= back
				m.fees += modelFee(rf, wechat)
				bal += -merchant - modelFee(rf, wechat)
			}
		}
		w := cnFact{kind: "withdrawal", trade: fmt.Sprintf("W%s%02d", cnTradePrefix(provider), d), amount: 1 + r.Int64N(bal), at: at.Add(time.Hour)}
		out[d] = append(out[d], w)
		m.paid += w.amount
		bal -= w.amount
		m.closing = append(m.closing, bal)
	}
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
	var ct, cr int64 // 商家优惠 totals
	for _, f := range day {
		ts := beijingTime(f.at)
		switch f.kind {
		case "capture":
			nt++
			st += f.amount - f.coupon
			ct += f.coupon
			fmt.Fprintf(&tb, "%s\t,O%s\t,交易\t,商品\t,%s\t,%s\t,%s\t,%s\t,%s\t,\t,%s\t,\n", f.trade, f.trade, ts, ts, yuan(f.amount),
				yuan(f.amount-f.coupon), yuan(f.coupon), yuan(-f.fee5/1000))
			row(f.amount-f.coupon, 0, "在线支付", f.trade, f.at)
			row(0, f.fee5/1000, "收费", f.trade, f.at)
		case "refund":
			nr++
			merchant := f.amount - f.coupon
			sr -= merchant
			cr -= f.coupon
			fmt.Fprintf(&tb, "%s\t,O%s\t,退款\t,商品\t,%s\t,%s\t,%s\t,%s\t,%s\t,%s\t,%s\t,\n", f.trade, f.trade, ts, ts, yuan(f.amount),
				yuan(-merchant), yuan(-f.coupon), f.refund, yuan(-f.fee5/1000))
			row(0, merchant, "交易退款", f.trade, f.at)
			row(-f.fee5/1000, 0, "收费", f.trade, f.at)
		case "withdrawal":
			row(0, f.amount, "提现", f.trade, f.at)
		}
	}
	tb.WriteString("#-----------------------------------------业务明细列表结束------------------------------------\n")
	fmt.Fprintf(&tb, "#交易合计：%d笔，商家实收共%s元，商家优惠共%s元\n#退款合计：%d笔，商家实收共%s元，商家优惠共%s元\n", nt, yuan(st), yuan(ct), nr, yuan(sr), yuan(cr))
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
	var ordered, applied int64
	for _, f := range day {
		ts := beijingTime(f.at)
		fee := int64(math.Floor(math.Abs(float64(f.fee5))/1000 + 0.5))
		switch f.kind {
		case "capture":
			n++
			settled += f.amount - f.coupon
			ordered += f.amount
			fee5 += f.fee5
			tb.WriteString(bt(ts, "wx2421b1c4370ec43b", "1230000109", "0", "", f.trade, "O"+f.trade, "oUpF8uMu", "JSAPI", "SUCCESS", "OTHERS", "CNY",
				yuan(f.amount-f.coupon), yuan(f.coupon), "0", "0", "0.00", "0.00", "", "", "商品", "", fee5Text(f.fee5), "0.60%", yuan(f.amount), "0.00", ""))
			row(f.amount-f.coupon, "交易", f.trade, f.at)
			row(-fee, "扣除交易手续费", f.trade, f.at)
		case "refund":
			n++
			merchant := f.amount - f.coupon
			refunded += merchant
			applied += f.amount
			fee5 += f.fee5
			status := "SUCCESS"
			if f.closed {
				status = "PROCESSING" // as billed when initiated: WeChat never updates the row
			}
			tb.WriteString(bt(ts, "wx2421b1c4370ec43b", "1230000109", "0", "", f.trade, "O"+f.trade, "oUpF8uMu", "JSAPI", "REFUND", "OTHERS", "CNY",
				"0.00", "0.00", f.refund, "O"+f.refund, yuan(merchant), "0.00", "ORIGINAL", status, "商品", "", fee5Text(f.fee5), "0.60%", "0.00", yuan(f.amount), ""))
			if !f.closed {
				row(-merchant, "退款", f.refund, f.at)
				row(fee, "退还交易手续费", f.refund, f.at)
			}
		case "withdrawal":
			row(-f.amount, "提现", f.trade, f.at)
		}
	}
	tb.WriteString("总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\r\n")
	tb.WriteString(bt(fmt.Sprint(n), yuan(settled), yuan(refunded), "0.00", fee5Text(fee5), yuan(ordered), yuan(applied)))
	fb.WriteString("资金流水总笔数,收入笔数,收入金额,支出笔数,支出金额\r\n")
	fb.WriteString(bt(fmt.Sprint(nIn+nOut), fmt.Sprint(nIn), yuan(in), fmt.Sprint(nOut), yuan(out)))
	return []byte(tb.String()), []byte(fb.String()), bal
}

// TestGeneratedChineseBillsCloseTheBooks: a few seeds per provider, each
// a small month (3 days of 10 trades). Seed 0 sends no notification (the
// bills alone: every fact recorded from its line, each with its
// missing_webhook item). Merchant coupons and refunds of couponed trades
// (Alipay and WeChat), and refunds WeChat closed, come in every month.
// ONCELEDGER_TEST_PROPERTY_RUNS=N runs N more seeds (from
// ONCELEDGER_TEST_PROPERTY_SEED, or the clock) of 3+N days of 10+N trades.
func TestGeneratedChineseBillsCloseTheBooks(t *testing.T) {
	runs, _ := propRuns()
	extra := 0
	if os.Getenv("ONCELEDGER_TEST_PROPERTY_RUNS") != "" {
		extra = runs
	}
	base := propSeed(t)
	for _, provider := range []string{"alipay", "wechatpay"} {
		for _, seed := range []uint64{0, 1, 2} {
			t.Run(fmt.Sprintf("%s/seed-%d", provider, seed), func(t *testing.T) {
				cnMonth(t, provider, seed, 3, 10)
			})
		}
		for i := range extra {
			seed := base + uint64(i)
			t.Run(fmt.Sprintf("%s/seed-%d", provider, seed), func(t *testing.T) {
				cnMonth(t, provider, seed, 3+extra, 10+extra)
			})
		}
	}
}

func cnMonth(t *testing.T, provider string, seed uint64, nDays, trades int) {
	kind := onPostgres
	if seed%2 == 1 {
		kind = onESDB // both stores: odd seeds on the EventStoreDB double
	}
	s, keys := cnSettleStackOn(t, kind) // one ledger per run: bank:payouts is shared
	r := rand.New(rand.NewPCG(seed, 25))
	days, m := cnDays(r, provider, nDays, trades)
	bal := m.opening
	var sends []func() // every bill import and notification delivery, shuffled below
	var files [][]byte
	for d, day := range days {
		var trade, account []byte
		if provider == "alipay" {
			trade, account, bal = alipayBills(t, day, bal)
		} else {
			trade, account, bal = wechatBills(day, bal)
		}
		require.Equal(t, m.closing[d], bal, "the generator's running balance is the model's")
		for _, f := range [][]byte{trade, account} {
			files = append(files, f)
			sends = append(sends, func() {
				ans := s.v1(http.MethodPost, "/v1/settlements/"+provider, f)
				require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			})
		}
	}
	var missing []string
	for _, day := range days {
		for _, f := range day {
			if f.kind == "withdrawal" {
				continue // no notification: the account bill's line is the payout
			}
			if !f.closed && (seed == 0 || r.IntN(5) == 0) {
				// Dropped. A closed refund's REFUND.CLOSED always arrives:
				// without it the bill's row is a refund WeChat made.
				missing = append(missing, cnFactKey(f))
				continue
			}
			send := cnNotifier(t, s, keys, provider, f)
			for range 1 + r.IntN(2) { // some twice, as the providers resend
				sends = append(sends, send)
			}
		}
	}
	r.Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] })
	for _, send := range sends {
		send()
	}
	for _, f := range files { // every file again: nothing new
		ans := s.v1(http.MethodPost, "/v1/settlements/"+provider, f)
		require.Equal(t, http.StatusOK, ans.Status, ans.Body)
		assert.Contains(t, ans.Body, `"new":0`)
	}
	sort.Strings(missing)
	checkChineseModel(t, s, provider, m, days, missing)
	checkBalancesProven(s, provider, m.opening, days[0][0].at.Add(-time.Hour), provider != "alipay", dayEnds(days)) // assertions_property_test.go
}

// cnFactKey is the business id a fact's missing_webhook item names: the
// trade of a capture, the refund of a refund.
func cnFactKey(f cnFact) string {
	if f.kind == "refund" {
		return f.refund
	}
	return f.trade
}

// cnNotifier returns the delivery of f's notification: Alipay's
// trade_status_sync (a refund's refund_fee is the trade's refunded total,
// out_biz_no the refund), WeChat's TRANSACTION.SUCCESS or REFUND.SUCCESS
// (amount.refund, the refund's own). Each call delivers it again, as the
// provider resends: Alipay under the same notify_id, WeChat under the same
// id, signed anew.
func cnNotifier(t *testing.T, s *stack, keys [3]*rsa.PrivateKey, provider string, f cnFact) func() {
	id := "n-" + cnFactKey(f)
	if provider == "alipay" {
		ts := beijingTime(f.at)
		p := alipayNotification(id, f.trade, "TRADE_SUCCESS", map[string]string{"notify_time": ts, "out_trade_no": "O" + f.trade,
			"total_amount": yuan(f.total), "receipt_amount": yuan(f.total - f.tradeCoupon), "buyer_pay_amount": yuan(f.total - f.tradeCoupon),
			"gmt_payment": ts})
		if f.tradeCoupon > 0 {
			p["voucher_detail_list"] = fmt.Sprintf(`[{"voucherId":"V%s","name":"商家券","type":"ALIPAY_BIZ_VOUCHER","amount":"%s","merchantContribute":"%s","otherContribute":"0.00"}]`,
				f.trade, yuan(f.tradeCoupon), yuan(f.tradeCoupon))
			p["fund_bill_list"] = fmt.Sprintf(`[{"amount":"%s","fundChannel":"ALIPAYACCOUNT"},{"amount":"%s","fundChannel":"MDISCOUNT"}]`,
				yuan(f.total-f.tradeCoupon), yuan(f.tradeCoupon))
		}
		if f.kind == "refund" {
			p["refund_fee"], p["out_biz_no"], p["gmt_refund"] = yuan(f.refunded), f.refund, ts
			if f.refunded == f.total {
				p["trade_status"] = "TRADE_CLOSED" // fully refunded
			}
		}
		body := alipayBody(t, keys[0], p)
		return func() {
			ans := s.post("/webhooks/alipay", http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}, body)
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			require.Equal(t, "success", ans.Body)
		}
	}
	success := f.at.In(time.FixedZone("CST", 8*3600)).Format(time.RFC3339)
	var body []byte
	switch {
	case f.closed:
		content := wxRefund(f.trade, f.refund, "CLOSED", f.amount)
		delete(content, "success_time")
		content["amount"] = map[string]any{"total": f.total, "refund": f.amount, "payer_total": f.total - f.tradeCoupon,
			"payer_refund": f.amount - f.coupon}
		body = wechatBodyAt(t, id, "REFUND.CLOSED", content, f.at)
	case f.kind == "refund":
		content := wxRefund(f.trade, f.refund, "SUCCESS", f.amount)
		content["success_time"] = success
		content["amount"] = map[string]any{"total": f.total, "refund": f.amount, "payer_total": f.total - f.tradeCoupon,
			"payer_refund": f.amount - f.coupon}
		body = wechatBody(t, id, "REFUND.SUCCESS", content)
	default:
		content := wxTransaction(f.trade, f.total)
		content["success_time"] = success
		if f.coupon > 0 {
			content["amount"] = map[string]any{"total": f.total, "payer_total": f.total - f.coupon, "currency": "CNY"}
			content["promotion_detail"] = []map[string]any{{"coupon_id": "C" + f.trade, "name": "免充值券", "scope": "SINGLE",
				"type": "NOCASH", "amount": f.coupon, "stock_id": "931386", "wechatpay_contribute": 0, "merchant_contribute": f.coupon,
				"other_contribute": 0, "currency": "CNY"}}
		}
		body = wechatBody(t, id, "TRANSACTION.SUCCESS", content)
	}
	return func() {
		ans := s.post("/webhooks/wechatpay", wechatHeaders(t, keys[1], cnPubKeyID, time.Now(), body), body)
		require.Equal(t, http.StatusNoContent, ans.Status, ans.Body)
	}
}

// wechatBodyAt is wechatBody written at: a notification without a
// success_time (REFUND.CLOSED) is dated by its create_time.
func wechatBodyAt(t testing.TB, id, eventType string, content map[string]any, at time.Time) []byte {
	t.Helper()
	b := wechatBody(t, id, eventType, content)
	var env map[string]any
	require.NoError(t, json.Unmarshal(b, &env))
	env["create_time"] = at.In(time.FixedZone("CST", 8*3600)).Format(time.RFC3339)
	return mustJSON(env)
}

// cnSettleStack is settleStack with Alipay and WeChat Pay configured as
// startCNStack configures them (webhooks_cn_e2e_test.go).
func cnSettleStack(t *testing.T) (*stack, [3]*rsa.PrivateKey) {
	t.Helper()
	return cnSettleStackOn(t, onPostgres)
}

// cnSettleStackOn is cnSettleStack on the event store kind.
func cnSettleStackOn(t *testing.T, kind eventStoreKind) (*stack, [3]*rsa.PrivateKey) {
	t.Helper()
	keys, err := cnKeys()
	require.NoError(t, err)
	dir := t.TempDir()
	set := registry.NewSet()
	ali := set.Config(alipay.Name).(*alipay.Config)
	ali.PublicKeys, ali.AppIDs = []string{pemFile(t, dir, "alipay.pem", keys[0])}, []string{cnAppID}
	wx := set.Config(wechatpay.Name).(*wechatpay.Config)
	wx.Keys = []string{cnPubKeyID + "=" + pemFile(t, dir, "wechatpay.pem", keys[1])}
	wx.APIv3Keys, wx.MchIDs = []string{cnAPIv3Key}, []string{cnMchID}
	require.NoError(t, set.Check())
	unknown := app.NewUnknownKeys(testLogger())
	provs, err := set.Adapters(providers.Settings{Tolerance: 5 * time.Minute, UnknownKey: unknown.Report})
	require.NoError(t, err)
	cfg := app.Config{
		DatabaseURL: pgtest.NewDatabase(t), Providers: provs, UnknownKeys: unknown,
		APITokens: []string{settleReadToken}, AdminTokens: []string{"accountant=" + settleToken}, MaxBodyBytes: maxBody, Logger: testLogger(),
		IngestTimeout: 10 * time.Second, ProviderConcurrency: -1,
	}
	if kind == onESDB {
		cfg.EventStore = esdbfake.Start(t).URL()
	}
	a := newApp(t, cfg)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = projections.NewService(a.Events().Store, readmodel.New(a.Pool()), testLogger()).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &stack{t: t, kind: kind, dbURL: cfg.DatabaseURL, app: a, pool: a.Pool(), srv: srv, store: a.Events().Store}, keys
}

func checkChineseModel(t *testing.T, s *stack, provider string, m *cnModel, days [][]cnFact, missing []string) {
	t.Helper()
	s.projectedToHead()
	b := s.readBalances()
	assert.Equal(t, m.fees, b["expenses:fees:"+provider+"|CNY"], "the fee account is the bills' fee total")
	assert.Equal(t, m.refunds, b["revenue:refunds|CNY"], "the refunds made, each once")
	assert.Equal(t, -m.sales, b["revenue:sales|CNY"], "the captures, each once")
	assert.Equal(t, m.paid, b["bank:payouts|CNY"], "withdrawals paid out")
	assert.Equal(t, m.discounts, b["expenses:discounts:"+provider+"|CNY"], "coupons the provider never settled, net of those refunds returned")
	assert.Equal(t, m.sales-m.refunds-m.fees-m.paid-m.discounts, b["provider:"+provider+":balance|CNY"])
	for d, day := range days {
		w := day[len(day)-1] // the day's withdrawal
		got := s.scalar(`SELECT coalesce(sum(amount), 0)::bigint FROM ledger_entries
			WHERE account = $1 AND currency = 'CNY' AND effective_at <= $2`, "provider:"+provider+":balance", w.at)
		assert.Equal(t, m.closing[d]-m.opening, got, "day %d: the provider balance at the withdrawal is the bill's", d)
	}
	require.Eventually(t, func() bool { return equalStrings(s.openItems("missing_webhook"), missing) },
		30*time.Second, 100*time.Millisecond, "missing_webhook %v, want %v", s.openItems("missing_webhook"), missing)
	assert.Empty(t, s.openItems("settlement_mismatch"))
	assert.Empty(t, s.openItems("amount_mismatch"))
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
