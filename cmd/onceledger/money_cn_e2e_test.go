package main_test

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// Issue 34, cases 1–3: coupons and discounts in the Alipay and WeChat Pay
// market, through signed notifications and bill uploads, on both stores.

// alipayTradeBill is a GBK trade bill (业务明细) of rows, each
// "trade,type,订单金额,商家实收,商家优惠,refund,服务费", with the trailer
// totals computed from them.
func alipayTradeBill(t *testing.T, rows ...[7]string) []byte {
	var b strings.Builder
	b.WriteString("#支付宝业务明细查询\n#-----------------------------------------业务明细列表----------------------------------------\n")
	b.WriteString("支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,订单金额（元）,商家实收（元）,商家优惠（元）,退款批次号/请求号,服务费（元）,备注\n")
	type sum struct {
		n                int
		got, coupon, fee int64
	}
	sums := map[string]*sum{"交易": {}, "退款": {}}
	for _, r := range rows {
		fmt.Fprintf(&b, "%s\t,O%s\t,%s\t,商品\t,2026-11-29 10:00:05\t,2026-11-29 10:00:05\t,%s\t,%s\t,%s\t,%s\t,%s\t,\n", r[0], r[0], r[1], r[2], r[3], r[4], r[5], r[6])
		s := sums[r[1]]
		s.n++
		s.got += parseYuan(t, r[3])
		s.coupon += parseYuan(t, r[4])
	}
	b.WriteString("#-----------------------------------------业务明细列表结束------------------------------------\n")
	for _, typ := range []string{"交易", "退款"} {
		s := sums[typ]
		fmt.Fprintf(&b, "#%s合计：%d笔，商家实收共%s元，商家优惠共%s元\n", typ, s.n, yuan(s.got), yuan(s.coupon))
	}
	enc, err := simplifiedchinese.GBK.NewEncoder().String(b.String())
	require.NoError(t, err)
	return []byte(enc)
}

func parseYuan(t *testing.T, s string) int64 {
	v, err := parseMinorText(s, 2)
	require.NoError(t, err, s)
	return v
}

func (s *stack) wechatNotify(t *testing.T, keys [3]*rsa.PrivateKey, id, typ string, content map[string]any) {
	t.Helper()
	body := wechatBody(t, id, typ, content)
	ans := s.post("/webhooks/wechatpay", wechatHeaders(t, keys[1], cnPubKeyID, time.Now(), body), body)
	require.Equal(t, http.StatusNoContent, ans.Status, ans.Body)
}

func (s *stack) upload(t *testing.T, provider string, file []byte) {
	t.Helper()
	ans := s.v1(http.MethodPost, "/v1/settlements/"+provider, file)
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
}

// Case 1: Alipay, a 20.00 merchant coupon on a 100.00 trade (receipt_amount
// 80.00, voucher_detail_list merchantContribute 20.00, fund_bill_list
// MDISCOUNT), refunded 60.00 then in full (TRADE_CLOSED refund_fee 100.00),
// then the trade bill. Alipay refunds the buyer's own money first and the
// coupon last (alipay.trade.refund refund_amount): the last 40.00 is 20.00
// of the merchant's money and the 20.00 coupon. The balance ends at 0 and
// the discount is reversed.
func TestAlipayCouponedTradeRefundedInFull(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s, keys := cnSettleStackOn(t, kind)
			trade := uniqCN("2026112922001")
			coupon := map[string]string{"total_amount": "100.00", "receipt_amount": "80.00", "buyer_pay_amount": "80.00",
				"invoice_amount": "80.00", "point_amount": "0.00",
				"voucher_detail_list": `[{"voucherId":"2016101200073002586200003BQ4","name":"商家券","type":"ALIPAY_BIZ_VOUCHER","amount":"20.00","merchantContribute":"20.00","otherContribute":"0.00"}]`,
				"fund_bill_list":      `[{"amount":"80.00","fundChannel":"ALIPAYACCOUNT"},{"amount":"20.00","fundChannel":"MDISCOUNT"}]`}
			with := func(extra map[string]string) map[string]string { return withFields(coupon, extra) }
			send := func(p map[string]string) { sendAlipay(t, s, keys[0], p) }
			send(alipayNotification("n1-"+trade, trade, "TRADE_SUCCESS", with(nil)))
			send(alipayNotification("n2-"+trade, trade, "TRADE_SUCCESS", with(map[string]string{
				"refund_fee": "60.00", "out_biz_no": "R1-" + trade, "gmt_refund": "2026-11-29 11:00:00"})))
			send(alipayNotification("n3-"+trade, trade, "TRADE_CLOSED", with(map[string]string{
				"refund_fee": "100.00", "out_biz_no": "R2-" + trade, "gmt_refund": "2026-11-29 12:00:00", "gmt_close": "2026-11-29 12:00:00"})))
			s.upload(t, "alipay", alipayTradeBill(t,
				[7]string{trade, "交易", "100.00", "80.00", "20.00", "", "0.00"},
				[7]string{trade, "退款", "60.00", "-60.00", "0.00", "R1-" + trade, "0.00"},
				[7]string{trade, "退款", "40.00", "-20.00", "-20.00", "R2-" + trade, "0.00"}))
			s.projectedToHead()
			assert.Equal(t, map[string]int64{"revenue:sales|CNY": -10000, "revenue:refunds|CNY": 10000}, s.readBalances(),
				"provider:alipay:balance and expenses:discounts:alipay end at 0")
			assert.Empty(t, s.openItems("settlement_mismatch"))
			assert.Empty(t, s.openItems("missing_webhook"))
		})
	}
}

// Case 2: an Alipay trade known only from the trade bill, 订单金额 100.00,
// 商家实收 80.00, 商家优惠 20.00, 服务费 −0.48: the balance gets 79.52 and
// the discount is booked as for a notification.
func TestAlipayTradeKnownOnlyFromTheBillKeepsItsDiscount(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s, _ := cnSettleStackOn(t, kind)
			trade := uniqCN("2026112922002")
			s.upload(t, "alipay", alipayTradeBill(t, [7]string{trade, "交易", "100.00", "80.00", "20.00", "", "-0.48"}))
			s.projectedToHead()
			assert.Equal(t, map[string]int64{"revenue:sales|CNY": -10000, "provider:alipay:balance|CNY": 7952,
				"expenses:discounts:alipay|CNY": 2000, "expenses:fees:alipay|CNY": 48}, s.readBalances())
			assert.Equal(t, []string{trade}, s.openItems("missing_webhook"))
		})
	}
}

// Case 3: WeChat Pay, a merchant-funded no-cash coupon (免充值券,
// promotion_detail type NOCASH 10.00) on two 100.00 orders; one refunded
// in full (amount.refund 10000, payer_refund 9000). The trade bill states
// 应结订单金额 90.00 (订单金额 − 免充值券金额) and the refund's 退款金额
// 90.00 of 申请退款金额 100.00 with its fee returned; the fund-flow bill's
// 账户结余 ends at 0.00 after the withdrawal, and so does the ledger.
func TestWechatNoCashCouponAndItsRefund(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s, keys := cnSettleStackOn(t, kind)
			a, b := uniqCN("42000020261129A"), uniqCN("42000020261129B")
			promo := []map[string]any{{"coupon_id": "109519", "name": "免充值券", "scope": "SINGLE", "type": "NOCASH", "amount": 1000,
				"stock_id": "931386", "wechatpay_contribute": 0, "merchant_contribute": 1000, "other_contribute": 0, "currency": "CNY"}}
			for _, tx := range []string{a, b} {
				c := wxTransaction(tx, 10000)
				c["amount"] = map[string]any{"total": 10000, "payer_total": 9000, "currency": "CNY", "payer_currency": "CNY"}
				c["promotion_detail"] = promo
				s.wechatNotify(t, keys, "n-"+tx, "TRANSACTION.SUCCESS", c)
			}
			r := wxRefund(b, "5030"+b, "SUCCESS", 10000)
			r["amount"] = map[string]any{"total": 10000, "refund": 10000, "payer_total": 9000, "payer_refund": 9000}
			s.wechatNotify(t, keys, "n-r-"+b, "REFUND.SUCCESS", r)

			bt := func(cells ...string) string { return "`" + strings.Join(cells, ",`") + "\r\n" }
			var tb strings.Builder
			tb.WriteString("\uFEFF交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\r\n")
			for _, tx := range []string{a, b} {
				tb.WriteString(bt("2026-11-29 18:00:01", "wx2421b1c4370ec43b", cnMchID, "0", "", tx, "o-"+tx, "oUpF8uMu", "JSAPI", "SUCCESS", "OTHERS", "CNY",
					"90.00", "10.00", "0", "0", "0.00", "0.00", "", "", "商品", "", "0.54000", "0.60%", "100.00", "0.00", ""))
			}
			tb.WriteString(bt("2026-11-30 18:00:01", "wx2421b1c4370ec43b", cnMchID, "0", "", b, "o-"+b, "oUpF8uMu", "JSAPI", "REFUND", "OTHERS", "CNY",
				"0.00", "0.00", "5030"+b, "or-5030"+b, "90.00", "0.00", "ORIGINAL", "SUCCESS", "商品", "", "-0.54000", "0.60%", "0.00", "100.00", ""))
			tb.WriteString("总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\r\n")
			tb.WriteString(bt("3", "180.00", "90.00", "0.00", "0.54000", "200.00", "100.00"))
			s.upload(t, "wechatpay", []byte(tb.String()))

			var fb strings.Builder
			fb.WriteString("\uFEFF记账时间,微信支付业务单号,资金流水单号,业务名称,业务类型,收支类型,收支金额(元),账户结余(元),资金变更提交申请人,备注,业务凭证号\r\n")
			fb.WriteString(bt("2026-11-29 18:00:01", a, "F1"+a, "交易", "交易", "收入", "90.00", "90.00", "system", "", ""))
			fb.WriteString(bt("2026-11-29 18:00:01", a, "F2"+a, "扣除交易手续费", "扣除交易手续费", "支出", "0.54", "89.46", "system", "", ""))
			fb.WriteString(bt("2026-11-29 18:00:01", b, "F1"+b, "交易", "交易", "收入", "90.00", "179.46", "system", "", ""))
			fb.WriteString(bt("2026-11-29 18:00:01", b, "F2"+b, "扣除交易手续费", "扣除交易手续费", "支出", "0.54", "178.92", "system", "", ""))
			fb.WriteString(bt("2026-11-30 18:00:01", b, "F3"+b, "退款", "退款", "支出", "90.00", "88.92", "system", "", ""))
			fb.WriteString(bt("2026-11-30 18:00:01", b, "F4"+b, "退还交易手续费", "退还交易手续费", "收入", "0.54", "89.46", "system", "", ""))
			fb.WriteString(bt("2026-11-30 20:00:00", "W"+a, "W"+a, "提现", "提现", "支出", "89.46", "0.00", "system", "", ""))
			fb.WriteString("资金流水总笔数,收入笔数,收入金额,支出笔数,支出金额\r\n")
			fb.WriteString(bt("7", "3", "180.54", "4", "180.54"))
			s.upload(t, "wechatpay", []byte(fb.String()))

			s.projectedToHead()
			assert.Equal(t, map[string]int64{"revenue:sales|CNY": -20000, "revenue:refunds|CNY": 10000,
				"expenses:discounts:wechatpay|CNY": 1000, "expenses:fees:wechatpay|CNY": 54, "bank:payouts|CNY": 8946}, s.readBalances(),
				"provider:wechatpay:balance ends at 0.00, as 账户结余 says")
			assert.Empty(t, s.openItems("settlement_mismatch"))
			assert.Empty(t, s.openItems("missing_webhook"))
		})
	}
}

// wechatTradeBill is a trade bill (交易账单) of rows, each [交易时间, 微信订单号,
// 交易状态, 应结订单金额, 微信退款单号, 退款金额, 退款状态, 手续费, 订单金额,
// 申请退款金额], with its summary row computed from them.
func wechatTradeBill(t *testing.T, rows ...[10]string) []byte {
	bt := func(cells ...string) string { return "`" + strings.Join(cells, ",`") + "\r\n" }
	var b strings.Builder
	b.WriteString("\uFEFF交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\r\n")
	var settled, refunded, fee5, ordered, applied int64
	for _, r := range rows {
		b.WriteString(bt(r[0], "wx2421b1c4370ec43b", cnMchID, "0", "", r[1], "o-"+r[1], "oUpF8uMu", "JSAPI", r[2], "OTHERS", "CNY",
			r[3], "0.00", r[4], "o"+r[4], r[5], "0.00", "ORIGINAL", r[6], "商品", "", r[7], "0.60%", r[8], r[9], ""))
		settled += parseYuan(t, r[3])
		refunded += parseYuan(t, r[5])
		ordered += parseYuan(t, r[8])
		applied += parseYuan(t, r[9])
		f, err := parseMinorText(r[7], 5)
		require.NoError(t, err)
		fee5 += f
	}
	b.WriteString("总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\r\n")
	b.WriteString(bt(fmt.Sprint(len(rows)), yuan(settled), yuan(refunded), "0.00", fee5Text(fee5), yuan(ordered), yuan(applied)))
	return []byte(b.String())
}

// Case 6: WeChat bills a refund when it is initiated and never updates the
// row; REFUND.CLOSED means it failed. A trade-bill REFUND row (退款状态
// PROCESSING) of a refund the provider closed posts nothing, whether the
// CLOSED notification came before the bill or after it, and no
// missing_webhook stays open for it.
func TestWechatClosedRefundBilledPostsNothing(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		for _, closedFirst := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/closed-first=%v", kind, closedFirst), func(t *testing.T) {
				s, keys := cnSettleStackOn(t, kind)
				tx := uniqCN("42000020261129C")
				refund := "5030" + tx
				s.wechatNotify(t, keys, "n-"+tx, "TRANSACTION.SUCCESS", wxTransaction(tx, 10000))
				closed := func() {
					s.wechatNotify(t, keys, "n-c-"+tx, "REFUND.CLOSED", wxRefund(tx, refund, "CLOSED", 5000))
				}
				if closedFirst {
					closed()
				}
				s.upload(t, "wechatpay", wechatTradeBill(t,
					[10]string{"2026-11-29 18:00:01", tx, "SUCCESS", "100.00", "0", "0.00", "", "0.60000", "100.00", "0.00"},
					[10]string{"2026-11-30 18:00:01", tx, "REFUND", "0.00", refund, "50.00", "PROCESSING", "-0.30000", "0.00", "50.00"}))
				if !closedFirst {
					closed()
				}
				s.projectedToHead()
				assert.Equal(t, map[string]int64{"revenue:sales|CNY": -10000, "provider:wechatpay:balance|CNY": 9940,
					"expenses:fees:wechatpay|CNY": 60}, s.readBalances(), "the closed refund posts nothing, nor its fee")
				assert.Empty(t, s.openItems("missing_webhook"), "the CLOSED notification did arrive")
			})
		}
	}
}

// An Alipay refund whose notification arrives after a later refund's
// (refund_fee is the trade's refunded total, gmt_refund the refund's time):
// R1 refunds 30.00 at 11:00 (total 30.00), R2 20.00 at 12:00 (total
// 50.00); R2's notification comes first and posts 50.00 at 12:00, then
// R1's books its 30.00 at 11:00 and takes it off 12:00; the bill changes
// nothing. The books as of 11:30 hold R1's refund only, and in the end
// both.
func TestAlipayRefundNotifiedLateBookedAtItsOwnTime(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s, keys := cnSettleStackOn(t, kind)
			trade := uniqCN("2026112922002")
			base := map[string]string{"total_amount": "100.00", "receipt_amount": "100.00", "buyer_pay_amount": "100.00",
				"invoice_amount": "100.00", "point_amount": "0.00"}
			with := func(extra map[string]string) map[string]string { return withFields(base, extra) }
			send := func(p map[string]string) { sendAlipay(t, s, keys[0], p) }
			send(alipayNotification("n1-"+trade, trade, "TRADE_SUCCESS", with(nil)))
			send(alipayNotification("n3-"+trade, trade, "TRADE_SUCCESS", with(map[string]string{
				"refund_fee": "50.00", "out_biz_no": "R2-" + trade, "gmt_refund": "2026-11-29 12:00:00"})))
			send(alipayNotification("n2-"+trade, trade, "TRADE_SUCCESS", with(map[string]string{
				"refund_fee": "30.00", "out_biz_no": "R1-" + trade, "gmt_refund": "2026-11-29 11:00:00"})))
			s.upload(t, "alipay", alipayTradeBill(t,
				[7]string{trade, "交易", "100.00", "100.00", "0.00", "", "0.00"},
				[7]string{trade, "退款", "30.00", "-30.00", "0.00", "R1-" + trade, "0.00"},
				[7]string{trade, "退款", "20.00", "-20.00", "0.00", "R2-" + trade, "0.00"}))
			s.projectedToHead()
			refunds := func(asOf string) int64 {
				var out struct {
					Balances []struct {
						Balance int64 `json:"balance"`
					} `json:"balances"`
				}
				ans := s.v1(http.MethodGet, "/v1/balances?account=revenue:refunds&currency=CNY&as_of="+asOf, nil)
				require.Equal(t, http.StatusOK, ans.Status, ans.Body)
				require.NoError(t, json.Unmarshal([]byte(ans.Body), &out))
				sum := int64(0)
				for _, b := range out.Balances {
					sum += b.Balance
				}
				return sum
			}
			// Alipay's times are Beijing time (+08:00).
			assert.Equal(t, int64(3000), refunds("2026-11-29T11:30:00%2B08:00"), "R1's refund at its own 11:00, R2's not yet")
			assert.Equal(t, int64(5000), refunds("2026-11-29T12:30:00%2B08:00"))
			assert.Empty(t, s.openItems("settlement_mismatch"))
			assert.Empty(t, s.openItems("missing_webhook"))
		})
	}
}

// withFields is base with extra's fields added (or replaced): one
// notification's parameters on top of the trade's.
func withFields(base, extra map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, extra)
	return out
}

// sendAlipay posts one Alipay notification signed with k and requires
// Alipay's "success" answer.
func sendAlipay(t *testing.T, s *stack, k *rsa.PrivateKey, p map[string]string) {
	t.Helper()
	ans := s.post("/webhooks/alipay", http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}, alipayBody(t, k, p))
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	require.Equal(t, "success", ans.Body)
}
