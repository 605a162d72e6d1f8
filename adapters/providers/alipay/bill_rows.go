package alipay

import (
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// tradeRow is one row of the trade bill (bill.go for the rules).
func (b *bill) tradeRow(rec []string) error {
	typ := b.get(rec, "业务类型")
	if err := b.count(typ, rec); err != nil {
		return err
	}
	tradeNo := b.get(rec, "支付宝交易号")
	if tradeNo == "" {
		return report.Errorf(b.last, "支付宝交易号", "missing")
	}
	at, err := b.when(rec, "完成时间")
	if err != nil {
		return err
	}
	fee, err := b.amount(rec, "服务费(元)")
	if err != nil {
		return err
	}
	l := settlement.Line{Provider: Name, SourceType: typ, PaymentKey: tradeNo, CaptureID: tradeNo,
		Currency: cny, OriginalCurrency: cny, OccurredAt: at,
		Fee: -fee} // printed negative when charged, positive when returned
	l.MerchantRef = b.get(rec, "商户订单号") // a reference for expected payments, not a fact
	switch typ {
	case "交易":
		order, err := b.amount(rec, "订单金额(元)")
		if err != nil {
			return err
		}
		// 商家实收 is what reached the merchant: the order less what the
		// merchant funded of it (商家优惠, merchant coupons), which Alipay
		// never pays out, as a notification's receipt_amount below its
		// total_amount. The capture is of the order; the difference is its
		// discount (docs/providers.md).
		l.Gross, l.OriginalAmount = order, order
		if b.get(rec, "商家实收(元)") != "" {
			if l.Gross, err = b.amount(rec, "商家实收(元)"); err != nil {
				return err
			}
		}
		if l.Gross < 0 || l.Gross > order {
			return report.Errorf(b.last, "商家实收(元)", "%s is not within 0 and the order's %s",
				money.FormatMinor(l.Gross, cny), money.FormatMinor(order, cny))
		}
		l.Discount = order - l.Gross
		l.Kind, l.Key = settlement.KindCharge, "trade:"+tradeNo
	case "退款":
		refund := b.get(rec, "退款批次号/请求号")
		if refund == "" {
			return report.Errorf(b.last, "退款批次号/请求号", "a refund row needs its out_biz_no")
		}
		v, err := b.amount(rec, "商家实收(元)")
		if err != nil {
			return err
		}
		// 商家实收 is the merchant's money the refund took; 商家优惠 the
		// merchant coupon it returned to the buyer (Alipay refunds the
		// buyer's own money first, the coupon last: alipay.trade.refund
		// refund_amount), which leaves no balance. The refund is both.
		coupon, err := b.amount(rec, "商家优惠(元)")
		if err != nil {
			return err
		}
		l.Gross, l.Discount = -abs(v), abs(coupon)
		l.OriginalAmount = l.Gross - l.Discount
		l.Kind, l.RefundID, l.Key = settlement.KindRefund, refund, "refund:"+tradeNo+":"+refund
		// The row is the refund's own amount; its notification's refund_fee
		// is the trade's refunded total (docs/reference.md, Alipay).
		l.CumulativeRefund = true
	default:
		return report.Errorf(b.last, "业务类型", "unknown 业务类型 %q (交易 or 退款)", typ)
	}
	if l.Net, err = settlement.SubChecked(l.Gross, l.Fee); err != nil {
		return report.Errorf(b.last, "服务费(元)", "%v", err)
	}
	return b.emit(l, rec)
}

// accountRow is one row of the account bill: the running balance is
// checked on every row; withdrawals are payouts, a gap is recorded.
func (b *bill) accountRow(rec []string) error {
	id := b.get(rec, "账务流水号")
	if id == "" {
		return report.Errorf(b.last, "账务流水号", "missing")
	}
	at, err := b.when(rec, "发生时间")
	if err != nil {
		return err
	}
	in, err := b.amount(rec, "收入金额(+元)")
	if err != nil {
		return err
	}
	out, err := b.amount(rec, "支出金额(-元)")
	if err != nil {
		return err
	}
	bal, err := b.amount(rec, "账户余额(元)")
	if err != nil {
		return err
	}
	if err := b.tally("收入", abs(in)); err != nil {
		return err
	}
	if err := b.tally("支出", -abs(out)); err != nil {
		return err
	}
	move := abs(in) - abs(out)
	if b.stated != nil { // the balance after this line (stated.go)
		if err := b.stated(report.Stated{Account: ledger.ProviderBalance(Name), Currency: cny, AsOf: at, Amount: bal,
			Source: "alipay account bill"}); err != nil {
			return err
		}
	}
	base := settlement.Line{Provider: Name, Currency: cny, OriginalCurrency: cny, OccurredAt: at, LineID: id, NoWebhook: true}
	if gap, ok := b.balance.Gap(base, move, bal); ok {
		if err := b.emit(gap, rec); err != nil {
			return err
		}
	}
	if typ := b.get(rec, "业务类型"); typ == "提现" {
		l := base
		l.Kind, l.SourceType, l.PayoutID, l.Key = settlement.KindPayout, typ, id, "account:"+id
		l.Gross, l.Net, l.OriginalAmount = move, move, move
		if move == 0 {
			return report.Errorf(b.last, "支出金额(-元)", "a withdrawal of nothing")
		}
		return b.emit(l, rec)
	}
	return nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
