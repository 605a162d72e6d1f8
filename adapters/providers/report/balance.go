package report

import "github.com/onceledger/onceledger/domain/settlement"

// Balance follows a running balance printed on every line of an account
// statement (Alipay's 账务明细 账户余额, WeChat Pay's 资金账单 账户结余):
// each line's balance must be the previous line's plus its amount. The
// first line of a file sets the balance; it is not checked.
type Balance struct {
	prev int64
	seen bool
}

// Gap takes the next line's signed amount and printed balance. When the
// balance does not follow it returns the gap line (ok): line's provider,
// currency, id and date with Kind adjustment, SourceType
// settlement.SourceBalanceGap, Key "balance-gap:" + line.LineID and the
// unexplained movement as Gross and Net; recording it opens
// settlement_mismatch naming the line (docs/settlement.md).
func (b *Balance) Gap(line settlement.Line, amount, printed int64) (gap settlement.Line, ok bool) {
	prev, seen := b.prev, b.seen
	b.prev, b.seen = printed, true
	if !seen {
		return gap, false
	}
	d := printed - prev - amount
	if d == 0 {
		return gap, false
	}
	gap = line
	gap.Kind, gap.SourceType, gap.Key = settlement.KindAdjustment, settlement.SourceBalanceGap, "balance-gap:"+line.LineID
	gap.Gross, gap.Fee, gap.Net, gap.OriginalAmount = d, 0, d, d
	gap.NoWebhook = true
	return gap, true
}
