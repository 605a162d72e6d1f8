package alipay

// Bills (对账单) through the settlement import: the files that
// alipay.data.dataservice.bill.downloadurl.query points at, as
// docs/settlement.md walks through.
//
//   - The trade bill (bill_type=trade, 业务明细): a .csv.zip holding the
//     detail file (…_业务明细.csv) and its summary (…_业务明细(汇总).csv),
//     or the detail CSV itself. The zip is spooled to a temporary file
//     (archive/zip needs random access) and the detail file picked by
//     name: never the summary. The text is GBK (dax-pay
//     AliPayReconcileService.java reads the zip entries as GBK). '#'
//     lines are comments and markers: the rows sit between
//     "#…业务明细列表…" and "#…业务明细列表结束…"; the trailer after
//     the end marker states the totals ("#交易合计：N笔，商家实收共X元，…",
//     "#退款合计：…"), checked when present: dax-pay's parseDetail drops
//     the last two lines of the file as its trailer, so a bill without
//     the totals lines is read too. Cells are padded with tabs, trimmed
//     (dax-pay removes every tab).
//   - The account bill (bill_type=signcustomer, 账务明细): every movement
//     of the account with its running balance 账户余额（元）; 提现
//     (withdrawals) are the payouts.
//
// Facts, keyed as this package's webhooks key them (notification.go):
//   - 业务类型 交易: a capture of 订单金额（元） (total_amount) in stream
//     payment-alipay-{支付宝交易号}, capture id = trade_no.
//   - 业务类型 退款: a refund of |商家实收（元）| of that trade, refund id
//     = 退款批次号/请求号 (out_biz_no, as the refund notifications name
//     it).
//   - 服务费（元） is the line's fee, signed as Alipay prints it: negative
//     is a fee charged (Fee = +fee), positive on a refund is a fee returned
//     (Fee = −fee). dax-pay's AliReconcileBillDetail
//     (…/channel/alipay/entity/AliReconcileBillDetail.java) keeps the
//     column as printed text (serviceAmount), without a sign rule of its
//     own; the sign convention is the one issue 25 and docs/reference.md
//     state, not confirmed in an Alipay page read for this importer.
//     Searched again for docs/settlement.md: still no Alipay statement.
//   - The account bill's other rows (trade income, refunds, the service
//     fee rows 收费) are the trade bill's facts seen from the balance:
//     they are read for the running balance only, so a fee in both bills
//     is booked once, from the trade bill.
//   - A row whose 账户余额 is not the previous row's plus its amount is a
//     gap: an adjustment line (settlement.SourceBalanceGap) that opens
//     settlement_mismatch naming the row's 账务流水号.
//
// A file whose trailer counts or totals disagree with its rows, or that
// ends before its end marker, is refused whole (reportimport validates a
// file before recording any line) with the line named.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

var _ report.Parser = ParseSettlement

// ParseSettlement streams an Alipay bill: the trade bill (.csv.zip or its
// detail CSV) or the account bill, told apart by their header.
func ParseSettlement(r io.Reader, opt report.Options, fn report.Func) error {
	br := bufio.NewReader(r)
	head, _ := br.Peek(4)
	if bytes.Equal(head, []byte("PK\x03\x04")) {
		return parseZip(br, opt, fn)
	}
	return parseBill(br, opt, fn)
}

// parseZip spools the archive and parses its detail file.
func parseZip(r io.Reader, opt report.Options, fn report.Func) error {
	tmp, err := os.CreateTemp("", "alipay-bill-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := io.Copy(tmp, r)
	if err != nil {
		return err
	}
	z, err := report.OpenZip(tmp, n, report.DefaultLimits)
	if err != nil {
		return err
	}
	var detail *zip.File
	for _, f := range z.File {
		name := entryName(f)
		if strings.Contains(name, "汇总") || !strings.HasSuffix(strings.ToLower(name), ".csv") {
			continue
		}
		if strings.Contains(name, "明细") {
			if detail != nil {
				return report.Errorf(1, "", "the zip holds two detail files: %q and %q", entryName(detail), name)
			}
			detail = f
		}
	}
	if detail == nil {
		return report.Errorf(1, "", "the zip holds no detail file (…_业务明细.csv)")
	}
	rc, err := report.OpenEntry(detail, report.DefaultLimits)
	var limit *report.ParseError
	if errors.As(err, &limit) {
		return limit
	}
	if err != nil {
		return report.Errorf(1, "", "zip entry %q: %v", entryName(detail), err)
	}
	defer rc.Close()
	return parseBill(bufio.NewReader(rc), opt, fn)
}

// entryName is a zip entry's name in UTF-8: Alipay's archives name their
// entries in GBK without the UTF-8 flag.
func entryName(f *zip.File) string {
	if f.NonUTF8 || !utf8.ValidString(f.Name) {
		if s, err := simplifiedchinese.GBK.NewDecoder().String(f.Name); err == nil {
			return s
		}
	}
	return f.Name
}

// bill is the state of one bill's parse.
type bill struct {
	fn      report.Func
	cols    map[string]int // normalized header name → index
	kind    string         // "trade" or "account", from the header
	state   int            // before, in or after the rows
	last    int            // the last line read
	sums    map[string]*trailerSum
	balance report.Balance // the 账户余额 / 账户结余 followed, account bills
	stated  func(report.Stated) error
}

const (
	beforeRows = iota
	inRows
	afterRows
)

// trailerSum is what the rows of one 业务类型 add up to: their count and
// the sum of each amount column, in fen.
type trailerSum struct {
	count int
	cols  map[string]int64
}

// parseBill reads a detail file line by line. GBK unless it starts with a
// UTF-8 byte order mark (a bill re-saved by a spreadsheet).
func parseBill(br *bufio.Reader, opt report.Options, fn report.Func) error {
	var src io.Reader = br
	if head, _ := br.Peek(3); bytes.Equal(head, []byte("\xEF\xBB\xBF")) {
		_, _ = br.Discard(3)
	} else {
		src = simplifiedchinese.GBK.NewDecoder().Reader(br)
	}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	b := &bill{fn: fn, sums: map[string]*trailerSum{}, stated: opt.Stated}
	for sc.Scan() {
		b.last++
		if err := b.line(strings.TrimRight(sc.Text(), "\r")); err != nil {
			return err
		}
	}
	var limit *report.ParseError
	if err := sc.Err(); errors.As(err, &limit) {
		return limit // a zip entry over a limit (report.OpenEntry)
	}
	if err := sc.Err(); err != nil {
		return report.Errorf(b.last+1, "", "unreadable: %v", err)
	}
	switch b.state {
	case beforeRows:
		return report.Errorf(max(b.last, 1), "", "no 明细列表 marker: not an Alipay detail bill")
	case inRows:
		return report.Errorf(max(b.last, 1), "", "the bill ends before its 明细列表结束 marker")
	}
	return nil
}

func (b *bill) line(s string) error {
	if strings.HasPrefix(s, "#") {
		return b.marker(s)
	}
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if b.state != inRows {
		return report.Errorf(b.last, "", "a row outside the 明细列表 markers")
	}
	rec, err := splitRow(s)
	if err != nil {
		return report.Errorf(b.last, "", "%v", err)
	}
	if b.cols == nil {
		return b.header(rec)
	}
	if b.kind == "trade" {
		return b.tradeRow(rec)
	}
	return b.accountRow(rec)
}

func (b *bill) marker(s string) error {
	switch {
	case strings.Contains(s, "明细列表结束"):
		if b.state != inRows {
			return report.Errorf(b.last, "", "an end marker without its start")
		}
		b.state = afterRows
	case strings.Contains(s, "明细列表"):
		if b.state != beforeRows {
			return report.Errorf(b.last, "", "a second 明细列表 marker")
		}
		b.state = inRows
	case b.state == afterRows && strings.Contains(s, "合计"):
		return b.trailerLine(s)
	}
	return nil
}

// splitRow splits one row (comma-separated; a quoted cell may hold a
// comma) and trims the padding of each cell.
func splitRow(s string) ([]string, error) {
	cr := csv.NewReader(strings.NewReader(s))
	cr.LazyQuotes = true
	cr.FieldsPerRecord = -1
	rec, err := cr.Read()
	if err != nil {
		return nil, err
	}
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}
	return rec, nil
}

// column is how header names are compared: full-width parentheses as
// ASCII ones (some exports print "(元)"), no white space.
func column(s string) string {
	s = strings.NewReplacer("（", "(", "）", ")", "\uFEFF", "").Replace(s)
	return strings.Join(strings.Fields(s), "")
}

func (b *bill) header(rec []string) error {
	b.cols = map[string]int{}
	for i, h := range rec {
		b.cols[column(h)] = i
	}
	var need []string
	switch {
	case b.has("支付宝交易号") && b.has("业务类型"):
		b.kind = "trade"
		need = []string{"支付宝交易号", "业务类型", "完成时间", "订单金额(元)", "商家实收(元)", "退款批次号/请求号", "服务费(元)"}
	case b.has("账务流水号"):
		b.kind = "account"
		need = []string{"账务流水号", "发生时间", "收入金额(+元)", "支出金额(-元)", "账户余额(元)", "业务类型"}
	default:
		return report.Errorf(b.last, "", "the header names neither a trade bill (支付宝交易号) nor an account bill (账务流水号)")
	}
	for _, n := range need {
		if !b.has(n) {
			return report.Errorf(b.last, n, "missing column")
		}
	}
	return nil
}

func (b *bill) has(name string) bool { _, ok := b.cols[name]; return ok }

func (b *bill) get(rec []string, name string) string {
	if i, ok := b.cols[name]; ok && i < len(rec) {
		return rec[i]
	}
	return ""
}

// amount reads a yuan cell into fen; an empty cell is 0.
func (b *bill) amount(rec []string, name string) (int64, error) {
	s := b.get(rec, name)
	if s == "" {
		return 0, nil
	}
	v, err := report.Major(strings.TrimPrefix(s, "+"), cny, 0)
	if err != nil {
		return 0, report.Errorf(b.last, name, "%v", err)
	}
	return v, nil
}

func (b *bill) when(rec []string, name string) (time.Time, error) {
	s := b.get(rec, name)
	t, err := time.ParseInLocation("2006-01-02 15:04:05", s, beijing)
	if err != nil {
		return time.Time{}, report.Errorf(b.last, name, "%q is not a date-time (yyyy-MM-dd HH:mm:ss)", s)
	}
	return t.UTC(), nil
}

// emit validates l and hands it on with the cells it was read from.
func (b *bill) emit(l settlement.Line, rec []string) error {
	if err := l.Validate(); err != nil {
		return report.Errorf(b.last, "", "%v", err)
	}
	raw := map[string]string{}
	for name, i := range b.cols {
		if i < len(rec) {
			raw[name] = rec[i]
		}
	}
	js, _ := json.Marshal(raw)
	return b.fn(report.Record{Line: l, Raw: js, Pos: b.last})
}

// trailerLine reads "#交易合计：N笔，商家实收共X元，商家优惠共Y元" into the
// expected count and column totals of the 业务类型 it names (交易, 退款).
func (b *bill) trailerLine(s string) error {
	s = strings.TrimPrefix(s, "#")
	label, rest, ok := strings.Cut(s, "：")
	if !ok {
		label, rest, ok = strings.Cut(s, ":")
	}
	if !ok || !strings.HasSuffix(label, "合计") {
		return nil // another comment
	}
	typ := strings.TrimSuffix(strings.TrimSpace(label), "合计")
	got := b.sums[typ]
	if got == nil {
		got = &trailerSum{cols: map[string]int64{}}
	}
	for i, part := range strings.FieldsFunc(rest, func(r rune) bool { return r == '，' || r == ',' }) {
		part = strings.TrimSpace(part)
		if i == 0 {
			n, err := strconv.Atoi(strings.TrimSuffix(part, "笔"))
			if err != nil || !strings.HasSuffix(part, "笔") {
				return report.Errorf(b.last, "", "trailer %q: %q is not a count (N笔)", label, part)
			}
			if n != got.count {
				return report.Errorf(b.last, "", "trailer %s says %d rows, the bill lists %d", label, n, got.count)
			}
			continue
		}
		name, amt, ok := strings.Cut(part, "共")
		if !ok || !strings.HasSuffix(amt, "元") {
			continue // not a total this importer knows how to check
		}
		col := column(name) + "(元)"
		if name == "" {
			col = totalColumn // the account bill's "#支出合计：N笔，共X元"
		} else if !b.has(col) {
			continue
		}
		want, err := report.Major(strings.TrimSuffix(amt, "元"), cny, 0)
		if err != nil {
			return report.Errorf(b.last, "", "trailer %s: %v", label, err)
		}
		if want != got.cols[col] {
			return report.Errorf(b.last, col, "trailer %s says %s, the rows sum to %s", label,
				money.FormatMinor(want, cny), money.FormatMinor(got.cols[col], cny))
		}
	}
	return nil
}

// totalColumn is the account bill's trailer total: the sum of the rows'
// 收入 (or 支出) amounts.
const totalColumn = "共"

// tally adds an amount to the account bill's trailer sums of typ (收入, 支出).
func (b *bill) tally(typ string, v int64) error {
	if v == 0 {
		return nil
	}
	s := b.sums[typ]
	if s == nil {
		s = &trailerSum{cols: map[string]int64{}}
		b.sums[typ] = s
	}
	s.count++
	var err error
	if s.cols[totalColumn], err = settlement.AddChecked(s.cols[totalColumn], v); err != nil {
		return report.Errorf(b.last, "", "%v", err)
	}
	return nil
}

// count adds a row of 业务类型 typ to the trailer sums.
func (b *bill) count(typ string, rec []string) error {
	s := b.sums[typ]
	if s == nil {
		s = &trailerSum{cols: map[string]int64{}}
		b.sums[typ] = s
	}
	s.count++
	for name := range b.cols {
		if !strings.HasSuffix(name, "(元)") || b.get(rec, name) == "" {
			continue
		}
		v, err := b.amount(rec, name)
		if err != nil {
			return err
		}
		if s.cols[name], err = settlement.AddChecked(s.cols[name], v); err != nil {
			return report.Errorf(b.last, name, "%v", err)
		}
	}
	return nil
}

// cny is the currency of every amount in the bills (元, fen).
const cny money.Currency = "CNY"
