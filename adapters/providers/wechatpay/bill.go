package wechatpay

// Bills through the settlement import (docs/settlement.md): the files
// GET /v3/bill/tradebill and GET /v3/bill/fundflowbill point at
// (download_url), as downloaded: UTF-8 with a byte order mark, gzip when
// requested with tar_type=GZIP (told by its magic bytes, not by a flag).
// Both have four parts: a header, detail rows, a summary header and one
// summary row; every detail and summary cell is prefixed with a backtick
// (pay.weixin.qq.com/docs/merchant/products/bill-download/format-trade.html,
// format-fundflow.html), removed here. Columns are found by header name.
//
// The trade bill (交易账单, bill_type=ALL), keyed as this package's
// webhooks key them (notification.go):
//   - 交易状态 SUCCESS: a capture of 订单金额 (amount.total; 应结订单金额
//     when the older column set has no 订单金额) in stream
//     payment-wechatpay-{微信订单号}, capture id = transaction_id.
//   - REFUND: a refund of 退款金额, refund id = 微信退款单号 (refund_id).
//     A refunded order keeps its SUCCESS row: the two rows are two facts.
//   - REVOKED (a cancelled order) moves nothing: counted, not recorded.
//   - 手续费 is printed with 5 decimals ("0.00600"), positive when
//     charged, negative when returned on a refund. The line's fee is it
//     rounded half up to the fen (half away from zero: -0.00650 is -0.01),
//     line by line: the fee account holds the sum of the rounded fees.
//     The 5 decimals are in WeChat's sample bill (developers.weixin.qq.com
//     …/wxcloudrun/src/development/pay/order/bill.html); the per-line
//     half-up rounding is docs/reference.md's rule, which no WeChat page
//     read for this importer states in so many words (searched again for
//     docs/settlement.md: the same sample prints 手续费总金额 with 5
//     decimals too, and no rounding rule).
//   - The summary row is the check: 总交易单数 must count the detail rows,
//     应结订单总金额 sum the SUCCESS rows' 应结订单金额, 退款总金额 the
//     REFUND rows' 退款金额. 手续费总金额 is compared exactly, at 5
//     decimals, with the sum of the printed (unrounded) fees, or with the
//     sum of the rounded fees: WeChat's format page describes the column
//     as the day's fee total without saying which sum it prints, and a
//     file showing either is consistent with its rows. Any other value
//     refuses the file naming the summary line.
//
// The fund-flow bill (资金账单): every movement of the account with its
// balance 账户结余(元). 业务名称 提现 (a withdrawal) is a payout; every
// row's balance must be the previous row's plus its 收支金额 (signed by
// 收支类型 收入/支出), else a gap line (settlement.SourceBalanceGap) opens
// settlement_mismatch naming the row's 资金流水单号. Its other rows are
// the trade bill's facts seen from the balance, read for the balance only.
// The summary (资金流水总笔数, 收入笔数, 收入金额, 支出笔数, 支出金额) is
// checked against the rows.

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

var _ report.Parser = ParseSettlement

// cny: the bills' amounts are 元 with fen.
const cny money.Currency = "CNY"

// billZone is the bills' time zone (Beijing time, no daylight saving).
var billZone = time.FixedZone("CST", 8*3600)

// ParseSettlement streams a WeChat Pay trade bill or fund-flow bill, told
// apart by their header.
func ParseSettlement(r io.Reader, opt report.Options, fn report.Func) error {
	br := bufio.NewReader(r)
	// Bounded (report.DefaultLimits): the CSV reader holds a line whole, so
	// a gzip of one endless line would otherwise be held in memory.
	var src io.Reader
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		gz, err := report.Gunzip(br, report.DefaultLimits)
		if err != nil {
			return err
		}
		src = gz
	} else {
		src = report.Bound(br, report.DefaultLimits, nil)
	}
	cr := csv.NewReader(src)
	cr.FieldsPerRecord, cr.LazyQuotes, cr.ReuseRecord = -1, true, true
	b := &wxBill{fn: fn, stated: opt.Stated}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return report.Errorf(max(pe.StartLine, 1), "", "%v", pe.Err)
		}
		var limit *report.ParseError
		if errors.As(err, &limit) {
			return limit
		}
		if err != nil {
			return report.Errorf(b.last+1, "", "unreadable: %v", err)
		}
		b.last, _ = cr.FieldPos(0)
		if err := b.record(rec); err != nil {
			return err
		}
	}
	return b.end()
}

// wxBill is the state of one bill's parse.
type wxBill struct {
	fn      report.Func
	last    int
	kind    string // "trade" or "fund", from the header
	cols    map[string]int
	sumCols map[string]int // the summary header
	summary bool           // the summary row was read
	rows    int
	sums    map[string]int64 // detail sums the summary states
	fee5    int64            // the printed fees, in 10^-5 yuan
	balance report.Balance   // the 账户余额 / 账户结余 followed, account bills
	stated  func(report.Stated) error
}

// cell strips the padding and the backtick WeChat puts before each cell.
func cell(s string) string {
	return strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(s, "\uFEFF")), "`")
}

func (b *wxBill) record(rec []string) error {
	if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
		return nil
	}
	first := cell(rec[0])
	switch {
	case b.cols == nil:
		return b.header(rec)
	case b.summary:
		return report.Errorf(b.last, "", "a row after the summary row")
	case first == "总交易单数" || first == "资金流水总笔数":
		if b.sumCols != nil {
			return report.Errorf(b.last, "", "a second summary header")
		}
		b.sumCols = index(rec)
		return nil
	case b.sumCols != nil:
		b.summary = true
		return b.checkSummary(rec)
	case b.kind == "trade":
		b.rows++
		return b.tradeRow(rec)
	default:
		b.rows++
		return b.fundRow(rec)
	}
}

func index(rec []string) map[string]int {
	m := map[string]int{}
	for i, h := range rec {
		m[strings.NewReplacer("（", "(", "）", ")").Replace(cell(h))] = i
	}
	return m
}

func (b *wxBill) header(rec []string) error {
	b.cols, b.sums = index(rec), map[string]int64{}
	var need []string
	switch {
	case b.has("微信订单号"):
		b.kind = "trade"
		need = []string{"交易时间", "微信订单号", "交易状态", "货币种类", "应结订单金额", "微信退款单号", "退款金额", "手续费"}
	case b.has("资金流水单号"):
		b.kind = "fund"
		need = []string{"记账时间", "资金流水单号", "业务名称", "收支类型", "收支金额(元)", "账户结余(元)"}
	default:
		return report.Errorf(b.last, "", "the header names neither a trade bill (微信订单号) nor a fund-flow bill (资金流水单号)")
	}
	for _, n := range need {
		if !b.has(n) {
			return report.Errorf(b.last, n, "missing column")
		}
	}
	return nil
}

func (b *wxBill) has(name string) bool { _, ok := b.cols[name]; return ok }

func (b *wxBill) get(rec []string, name string) string {
	if i, ok := b.cols[name]; ok && i < len(rec) {
		return cell(rec[i])
	}
	return ""
}

func (b *wxBill) amount(rec []string, name string) (int64, error) {
	s := b.get(rec, name)
	if s == "" {
		return 0, nil
	}
	v, err := report.Major(s, cny, 0)
	if err != nil {
		return 0, report.Errorf(b.last, name, "%v", err)
	}
	return v, nil
}

func (b *wxBill) add(key string, v int64) error {
	var err error
	if b.sums[key], err = settlement.AddChecked(b.sums[key], v); err != nil {
		return report.Errorf(b.last, key, "%v", err)
	}
	return nil
}

func (b *wxBill) when(rec []string, name string) (time.Time, error) {
	s := b.get(rec, name)
	t, err := time.ParseInLocation("2006-01-02 15:04:05", s, billZone)
	if err != nil {
		return time.Time{}, report.Errorf(b.last, name, "%q is not a date-time (yyyy-MM-dd HH:mm:ss)", s)
	}
	return t.UTC(), nil
}

func (b *wxBill) emit(l settlement.Line, rec []string) error {
	if err := l.Validate(); err != nil {
		return report.Errorf(b.last, "", "%v", err)
	}
	raw := map[string]string{}
	for name, i := range b.cols {
		if i < len(rec) {
			raw[name] = cell(rec[i])
		}
	}
	js, _ := json.Marshal(raw)
	return b.fn(report.Record{Line: l, Raw: js, Pos: b.last})
}

// end: a bill must end with its summary row.
func (b *wxBill) end() error {
	if b.cols == nil {
		return report.Errorf(max(b.last, 1), "", "empty: no header")
	}
	if !b.summary {
		return report.Errorf(max(b.last, 1), "", "the bill ends before its summary row")
	}
	return nil
}

// summaryMismatch names the summary cell that disagrees with the rows.
func (b *wxBill) summaryMismatch(col string, want, got string) error {
	return report.Errorf(b.last, col, "the summary says %s, the rows make %s", want, got)
}
