package wechatpay

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// tradeRow is one detail row of the trade bill (bill.go for the rules).
func (b *wxBill) tradeRow(rec []string) error {
	status := b.get(rec, "交易状态")
	txn := b.get(rec, "微信订单号")
	if txn == "" {
		return report.Errorf(b.last, "微信订单号", "missing")
	}
	cur, err := report.Currency(b.get(rec, "货币种类"))
	if err != nil || cur != cny {
		return report.Errorf(b.last, "货币种类", "%q: the bill's amounts are CNY", b.get(rec, "货币种类"))
	}
	at, err := b.when(rec, "交易时间")
	if err != nil {
		return err
	}
	fee5, err := fee5(b.get(rec, "手续费"))
	if err != nil {
		return report.Errorf(b.last, "手续费", "%v", err)
	}
	l := settlement.Line{Provider: Name, SourceType: status, PaymentKey: txn, CaptureID: txn,
		Currency: cny, OriginalCurrency: cny, OccurredAt: at, Fee: roundFen(fee5)}
	l.MerchantRef = b.get(rec, "商户订单号") // a reference for expected payments, not a fact
	switch status {
	case "SUCCESS":
		settle, err := b.amount(rec, "应结订单金额")
		if err != nil {
			return err
		}
		// 应结订单金额 is what WeChat settles: "应结订单金额 = 订单金额 −
		// 免充值券金额" (pay.weixin.qq.com, 交易账单). The capture is of the
		// order (订单金额, when the bill has it); the no-cash coupon is its
		// discount, as promotion_detail NOCASH is a notification's.
		l.Gross, l.OriginalAmount = settle, settle
		if b.has("订单金额") && b.get(rec, "订单金额") != "" {
			if l.OriginalAmount, err = b.amount(rec, "订单金额"); err != nil {
				return err
			}
		}
		if settle < 0 || settle > l.OriginalAmount {
			return report.Errorf(b.last, "应结订单金额", "%s is not within 0 and the order's 订单金额 %s",
				money.FormatMinor(settle, cny), money.FormatMinor(l.OriginalAmount, cny))
		}
		l.Discount = l.OriginalAmount - settle
		if err := b.add("应结订单金额", settle); err != nil {
			return err
		}
		l.Kind, l.Key = settlement.KindCharge, "trade:"+txn
	case "REFUND":
		refund := b.get(rec, "微信退款单号")
		if refund == "" {
			return report.Errorf(b.last, "微信退款单号", "a refund row needs its refund_id")
		}
		v, err := b.amount(rec, "退款金额")
		if err != nil {
			return err
		}
		if err := b.add("退款金额", v); err != nil {
			return err
		}
		// 退款金额 is the settled money the refund takes back (应结退款金额:
		// the refund less the no-cash coupon it returns); 申请退款金额 the
		// refund itself, as its notification's amount.refund. The
		// difference is coupon money returned: no balance moves for it.
		l.Gross = -abs(v)
		l.OriginalAmount = l.Gross
		if b.has("申请退款金额") && b.get(rec, "申请退款金额") != "" {
			applied, err := b.amount(rec, "申请退款金额")
			if err != nil {
				return err
			}
			if abs(applied) < abs(v) {
				return report.Errorf(b.last, "申请退款金额", "%s is below the 退款金额 %s",
					money.FormatMinor(abs(applied), cny), money.FormatMinor(abs(v), cny))
			}
			if applied != 0 {
				l.OriginalAmount, l.Discount = -abs(applied), abs(applied)-abs(v)
			}
		}
		l.Kind, l.RefundID, l.Key = settlement.KindRefund, refund, "refund:"+refund
	case "REVOKED":
		return nil // a cancelled order: no money moved (counted in 总交易单数)
	default:
		return report.Errorf(b.last, "交易状态", "unknown 交易状态 %q (SUCCESS, REFUND or REVOKED)", status)
	}
	if b.fee5, err = settlement.AddChecked(b.fee5, fee5); err != nil {
		return report.Errorf(b.last, "手续费", "%v", err)
	}
	if err := b.add("手续费", l.Fee); err != nil {
		return err
	}
	if l.Net, err = settlement.SubChecked(l.Gross, l.Fee); err != nil {
		return report.Errorf(b.last, "手续费", "%v", err)
	}
	return b.emit(l, rec)
}

// fee5 reads a fee printed with up to 5 decimals into 10^-5 yuan.
func fee5(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	neg := strings.HasPrefix(s, "-")
	i, f, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if i == "" || len(i) > 12 || len(f) > 5 || strings.Trim(i+f, "0123456789") != "" {
		return 0, fmt.Errorf("%w: %q is not a fee of at most 5 decimals", money.ErrInvalidAmount, s)
	}
	v, err := strconv.ParseInt(i+f+strings.Repeat("0", 5-len(f)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", money.ErrInvalidAmount, s)
	}
	if neg {
		v = -v
	}
	return v, nil
}

// roundFen rounds 10^-5 yuan to fen, half up (away from zero).
func roundFen(v5 int64) int64 {
	if v5 < 0 {
		return -((-v5 + 500) / 1000)
	}
	return (v5 + 500) / 1000
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// fundRow is one row of the fund-flow bill: the running balance is
// checked on every row; withdrawals are payouts, a gap is recorded.
func (b *wxBill) fundRow(rec []string) error {
	id := b.get(rec, "资金流水单号")
	if id == "" {
		return report.Errorf(b.last, "资金流水单号", "missing")
	}
	at, err := b.when(rec, "记账时间")
	if err != nil {
		return err
	}
	v, err := b.amount(rec, "收支金额(元)")
	if err != nil {
		return err
	}
	bal, err := b.amount(rec, "账户结余(元)")
	if err != nil {
		return err
	}
	var move int64
	switch dir := b.get(rec, "收支类型"); dir {
	case "收入":
		move = abs(v)
	case "支出":
		move = -abs(v)
	default:
		return report.Errorf(b.last, "收支类型", "unknown 收支类型 %q (收入 or 支出)", dir)
	}
	dir := "支出" // the summary's 收入笔数, 收入金额, 支出笔数, 支出金额
	if move >= 0 {
		dir = "收入"
	}
	if err := b.add(dir+"笔数", 1); err != nil {
		return err
	}
	if err := b.add(dir+"金额", abs(move)); err != nil {
		return err
	}
	if b.stated != nil { // the balance after this line (report/stated.go)
		if err := b.stated(report.Stated{Account: ledger.ProviderBalance(Name), Currency: cny, AsOf: at, Amount: bal,
			Source: "wechatpay fund-flow bill"}); err != nil {
			return err
		}
	}
	base := settlement.Line{Provider: Name, Currency: cny, OriginalCurrency: cny, OccurredAt: at, LineID: id, NoWebhook: true}
	if gap, ok := b.balance.Gap(base, move, bal); ok {
		if err := b.emit(gap, rec); err != nil {
			return err
		}
	}
	if name := b.get(rec, "业务名称"); name == "提现" {
		if move == 0 {
			return report.Errorf(b.last, "收支金额(元)", "a withdrawal of nothing")
		}
		l := base
		l.Kind, l.SourceType, l.PayoutID, l.Key = settlement.KindPayout, name, id, "fund:"+id
		l.Gross, l.Net, l.OriginalAmount = move, move, move
		return b.emit(l, rec)
	}
	return nil
}

// checkSummary compares the summary row with the rows.
func (b *wxBill) checkSummary(rec []string) error {
	get := func(name string) (string, bool) {
		i, ok := b.sumCols[name]
		if !ok || i >= len(rec) {
			return "", false
		}
		return cell(rec[i]), true
	}
	count := func(name string, n int64) error {
		s, ok := get(name)
		if !ok {
			return report.Errorf(b.last, name, "missing from the summary")
		}
		if s != strconv.FormatInt(n, 10) {
			return b.summaryMismatch(name, s, strconv.FormatInt(n, 10))
		}
		return nil
	}
	total := func(name string, v int64) error {
		s, ok := get(name)
		if !ok {
			return report.Errorf(b.last, name, "missing from the summary")
		}
		want, err := report.Major(s, cny, 0)
		if err != nil {
			return report.Errorf(b.last, name, "%v", err)
		}
		if want != v {
			return b.summaryMismatch(name, s, money.FormatMinor(v, cny))
		}
		return nil
	}
	if b.kind == "fund" {
		for _, c := range []func() error{
			func() error { return count("资金流水总笔数", int64(b.rows)) },
			func() error { return count("收入笔数", b.sums["收入笔数"]) },
			func() error { return total("收入金额", b.sums["收入金额"]) },
			func() error { return count("支出笔数", b.sums["支出笔数"]) },
			func() error { return total("支出金额", b.sums["支出金额"]) },
		} {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := count("总交易单数", int64(b.rows)); err != nil {
		return err
	}
	if err := total("应结订单总金额", b.sums["应结订单金额"]); err != nil {
		return err
	}
	if err := total("退款总金额", b.sums["退款金额"]); err != nil {
		return err
	}
	s, ok := get("手续费总金额")
	if !ok {
		return report.Errorf(b.last, "手续费总金额", "missing from the summary")
	}
	want, err := fee5(s)
	if err != nil {
		return report.Errorf(b.last, "手续费总金额", "%v", err)
	}
	if want != b.fee5 && want != b.sums["手续费"]*1000 {
		return b.summaryMismatch("手续费总金额", s, fmt.Sprintf("%s (printed) or %s (rounded per line)",
			fee5Text(b.fee5), money.FormatMinor(b.sums["手续费"], cny)))
	}
	return nil
}

func fee5Text(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%05d", sign, v/100000, v%100000)
}
