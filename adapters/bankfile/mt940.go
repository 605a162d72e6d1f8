package bankfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/domain/money"
)

// MT940 (SWIFT Customer Statement Message), as the SWIFT MT9 standards
// define it and banks deliver it: optional block headers ({1:…}{2:…}{4:) or
// a bank's own header lines before :20:, then the fields of one message, a
// line "-" (or "-}") ending it. Fields read: :20: transaction reference,
// :25: account, :28C: (or :28:) statement and sequence number,
// :60F:/:60M: opening balance, :61: statement lines with an :86: each,
// :62F:/:62M: closing balance; :64:, :65:, :21:, :13D: and a trailing :86:
// are checked for shape only where read. A statement split over several
// messages carries :60M:/:62M: on its intermediate pages; each message's
// own sum must hold, and each page must open where the last closed.

type mt940Reader struct {
	sc     *bufio.Scanner
	line   int
	sink   Sink
	peeked *mtField
	occ    occurrences
	// last closing of the previous message, for :60M: continuity.
	lastClose *Balance
	lastSeq   int64
	lastWasM  bool
}

type mtField struct {
	tag   string
	value string // continuation lines joined with "\n"
	line  int
}

func parseMT940(r io.Reader, sink Sink) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxLineBytes)
	m := &mt940Reader{sc: sc, sink: sink, occ: occurrences{}}
	n := 0
	for {
		ok, err := m.message()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		n++
	}
	if n == 0 {
		return perr(lineAt(m.line), ":20:", "no MT940 message in the file")
	}
	if m.lastWasM {
		return perr(lineAt(m.line), ":62F:", "the statement ends with an intermediate :62M: balance: its last page is missing")
	}
	return nil
}

// next returns the next field of the current message; nil at its end
// ("-" line, or the end of the file).
func (m *mt940Reader) next() (*mtField, error) {
	cur := m.peeked
	m.peeked = nil
	if cur != nil && cur.tag == "-" {
		return cur, nil
	}
	for m.sc.Scan() {
		m.line++
		raw := strings.TrimRight(m.sc.Text(), "\r")
		t := strings.TrimRight(raw, " ")
		if t == "-" || t == "-}" || strings.HasPrefix(t, "-}{5:") || (strings.HasPrefix(t, "-") && cur != nil && cur.tag == "62F") {
			if cur != nil {
				m.peeked = &mtField{tag: "-", line: m.line}
				return cur, nil
			}
			return &mtField{tag: "-", line: m.line}, nil
		}
		if tag, rest, ok := mtTag(t); ok && !(tag == "940" && cur == nil) {
			f := &mtField{tag: tag, value: rest, line: m.line}
			if cur != nil {
				m.peeked = f
				return cur, nil
			}
			cur = f
			continue
		}
		if cur == nil {
			if t == "" {
				continue
			}
			return &mtField{tag: "header", value: t, line: m.line}, nil
		}
		if cur.tag != "86" && cur.tag != "61" {
			if t == "" {
				continue
			}
			return nil, perr(lineAt(m.line), ":"+cur.tag+":", "a continuation line; only :61: and :86: continue on further lines")
		}
		cur.value += "\n" + raw
	}
	if err := m.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, perr(lineAt(m.line+1), "", "a line longer than %d bytes", MaxLineBytes)
		}
		return nil, err
	}
	return cur, nil
}

// mtTag splits ":61:rest" into "61" and "rest".
func mtTag(t string) (string, string, bool) {
	if len(t) < 4 || t[0] != ':' {
		return "", "", false
	}
	end := strings.IndexByte(t[1:], ':')
	if end < 2 || end > 3 {
		return "", "", false
	}
	tag := t[1 : end+1]
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(c >= '0' && c <= '9') && !(i == 2 && c >= 'A' && c <= 'Z') {
			return "", "", false
		}
	}
	return tag, t[end+2:], true
}

// mtMsg is the message being read.
type mtMsg struct {
	st       Statement
	begun    bool
	closed   bool
	pending  *Entry // a :61: waiting for its :86:
	any      bool
	openLine int
}

// flush hands the pending :61: (with its :86:) to the sink.
func (m *mt940Reader) flush(msg *mtMsg) error {
	if msg.pending == nil {
		return nil
	}
	e := *msg.pending
	msg.pending = nil
	e.Key = m.entryKey(&msg.st, e)
	msg.st.Entries++
	return m.sink.entry(&msg.st, e)
}

// message reads one message; false at the end of the file.
func (m *mt940Reader) message() (bool, error) {
	msg := &mtMsg{st: Statement{Format: MT940}}
	for {
		f, err := m.next()
		if err != nil {
			return false, err
		}
		if f == nil || f.tag == "-" {
			if !msg.any {
				if f == nil {
					return false, nil
				}
				continue
			}
			if !msg.closed {
				return false, perr(lineAt(m.line), ":62F:", "the message ends without a closing balance (:62F: or :62M:)")
			}
			return true, nil
		}
		if f.tag == "header" {
			if msg.any {
				return false, perr(lineAt(f.line), "", "text %q inside a message", trimTo(f.value, 30))
			}
			continue // {1:…}{2:…}{4: block headers, a bank's own header lines
		}
		msg.any = true
		if msg.closed && f.tag != "64" && f.tag != "65" && f.tag != "86" {
			return false, perr(lineAt(f.line), ":"+f.tag+":", "a field after the closing balance")
		}
		if err := m.field(msg, f); err != nil {
			return false, err
		}
	}
}

// field reads one field of a message.
func (m *mt940Reader) field(msg *mtMsg, f *mtField) error {
	st := &msg.st
	pos := lineAt(f.line)
	switch f.tag {
	case "20":
		if st.ID != "" || msg.begun {
			return perr(pos, ":20:", "a second :20: in one message (a missing \"-\" line?)")
		}
		st.ID, st.Pos = strings.TrimSpace(f.value), pos
		if st.ID == "" {
			return perr(pos, ":20:", "empty")
		}
	case "21", "13D", "13", "34F":
	case "25":
		st.Account = strings.TrimSpace(f.value)
		if st.Account == "" {
			return perr(pos, ":25:", "empty account")
		}
	case "28C", "28":
		seq, page, err := mtStatementNumber(f.value)
		if err != nil {
			return perr(pos, ":"+f.tag+":", "%v", err)
		}
		st.Seq, st.Page = seq, page
	case "60F", "60M":
		return m.opening(msg, f)
	case "61":
		if !msg.begun {
			return perr(pos, ":60F:", "a statement line before the opening balance")
		}
		if err := m.flush(msg); err != nil {
			return err
		}
		e, ferr := mtLine(f.value, st.Currency, st.Opening.Date)
		if ferr != nil {
			return perr(pos, ":61: "+ferr.field, "%v", ferr.err)
		}
		e.Pos = pos
		b, err := add(st.Booked, e.Amount)
		if err != nil {
			return perr(pos, ":61: amount", "%v", err)
		}
		st.Booked = b
		msg.pending = &e
	case "86":
		// The line's information to the account owner; several :86:
		// (older Rabobank files) are one text. After the closing
		// balance it is about the statement: nothing to post.
		if msg.pending != nil {
			msg.pending.Text = strings.TrimSpace(msg.pending.Text + " " + strings.TrimSpace(strings.ReplaceAll(f.value, "\n", " ")))
		}
	case "62F", "62M":
		return m.closing(msg, f)
	case "64", "65":
		if _, _, err := mtBalance(f.value, f.tag); err != nil {
			return perr(pos, ":"+f.tag+":", "%v", err)
		}
	default:
		return perr(pos, ":"+f.tag+":", "not an MT940 field")
	}
	return nil
}

func (m *mt940Reader) opening(msg *mtMsg, f *mtField) error {
	st, pos := &msg.st, lineAt(f.line)
	if st.ID == "" {
		return perr(pos, ":20:", "missing before the opening balance")
	}
	if st.Opening != nil {
		return perr(pos, ":"+f.tag+":", "a second opening balance")
	}
	b, cur, err := mtBalance(f.value, f.tag)
	if err != nil {
		return perr(pos, ":"+f.tag+":", "%v", err)
	}
	if err := m.continuity(f, b, cur); err != nil {
		return err
	}
	st.Opening, st.Currency, msg.openLine = b, cur, f.line
	msg.begun = true
	return m.sink.begin(st)
}

// closing checks the message's sum: :60F:/:60M: plus its :61: lines is
// its :62F:/:62M:.
func (m *mt940Reader) closing(msg *mtMsg, f *mtField) error {
	st, pos := &msg.st, lineAt(f.line)
	if err := m.flush(msg); err != nil {
		return err
	}
	if !msg.begun {
		return perr(pos, ":60F:", "a closing balance without an opening balance")
	}
	b, cur, err := mtBalance(f.value, f.tag)
	if err != nil {
		return perr(pos, ":"+f.tag+":", "%v", err)
	}
	if cur != st.Currency {
		return perr(pos, ":"+f.tag+": currency", "closing in %s, the statement opened in %s (line %d)", cur, st.Currency, msg.openLine)
	}
	st.Closing = b
	if got, err := add(st.Opening.Amount, st.Booked); err != nil || got != b.Amount {
		return perr(pos, ":"+f.tag+":", "opening %s (:%s:) plus the :61: lines %s is %s, the closing balance says %s",
			money.FormatMinor(st.Opening.Amount, cur), st.Opening.Code, money.FormatMinor(st.Booked, cur),
			money.FormatMinor(got, cur), money.FormatMinor(b.Amount, cur))
	}
	msg.closed = true
	m.lastClose, m.lastSeq, m.lastWasM = b, st.Seq, f.tag == "62M"
	return m.sink.end(st)
}

// continuity: an intermediate page (:60M:) opens where the previous one
// closed (:62M:), and a final opening (:60F:) does not interrupt a
// statement whose last page is missing.
func (m *mt940Reader) continuity(f *mtField, b *Balance, cur money.Currency) error {
	pos := lineAt(f.line)
	switch {
	case f.tag == "60M" && !m.lastWasM:
		return perr(pos, ":60M:", "an intermediate opening balance without the page before it (:62M:)")
	case f.tag == "60F" && m.lastWasM:
		return perr(pos, ":60F:", "a new statement before the last page (:62F:) of the one before")
	case f.tag == "60M" && m.lastClose.Amount != b.Amount:
		return perr(pos, ":60M:", "opens at %s, the page before closed at %s",
			money.FormatMinor(b.Amount, cur), money.FormatMinor(m.lastClose.Amount, cur))
	}
	return nil
}

func trimTo(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// mtStatementNumber reads "5n[/5n]".
func mtStatementNumber(v string) (int64, int64, error) {
	v = strings.TrimSpace(v)
	num, page, hasPage := strings.Cut(v, "/")
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || len(num) > 5 {
		return 0, 0, fmt.Errorf("%q is not a statement number (5n[/5n])", v)
	}
	var p int64
	if hasPage {
		p, err = strconv.ParseInt(page, 10, 64)
		if err != nil || p < 0 || len(page) > 5 {
			return 0, 0, fmt.Errorf("%q is not a statement number (5n[/5n])", v)
		}
	}
	return n, p, nil
}

// mtBalance reads "1!a6!n3!a15d": C or D, YYMMDD, currency, amount.
func mtBalance(v, tag string) (*Balance, money.Currency, error) {
	v = strings.TrimSpace(v)
	if len(v) < 11 {
		return nil, "", fmt.Errorf("%q is not a balance (C or D, YYMMDD, currency, amount)", v)
	}
	d, err := mtDate(v[1:7])
	if err != nil {
		return nil, "", err
	}
	cur, err := currencyOf(v[7:10])
	if err != nil {
		return nil, "", err
	}
	amt, err := mtAmount(v[10:], cur)
	if err != nil {
		return nil, "", err
	}
	switch v[0] {
	case 'C':
	case 'D':
		amt = -amt
	default:
		return nil, "", fmt.Errorf("mark %q is neither C nor D", v[:1])
	}
	return &Balance{Amount: amt, Date: d, Code: tag}, cur, nil
}

func mtDate(s string) (time.Time, error) {
	t, err := time.Parse("060102", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date (YYMMDD)", s)
	}
	return t, nil
}

// mtAmount reads SWIFT's decimal: digits, a comma, up to the currency's
// decimals ("1234,56", "9,").
func mtAmount(s string, c money.Currency) (int64, error) {
	if len(s) > 15 || !strings.Contains(s, ",") || strings.Count(s, ",") != 1 {
		return 0, fmt.Errorf("%w: %q is not a SWIFT amount (up to 15 characters, one decimal comma)", money.ErrInvalidAmount, s)
	}
	s = strings.TrimSuffix(strings.Replace(s, ",", ".", 1), ".")
	return amountMajor(s, c)
}

type fieldErr struct {
	field string
	err   error
}

// mtLine reads a :61: statement line:
// 6!n[4!n]2a[1!a]15d1!a3!c16x[//16x] and optionally [34x] on a second line:
// value date, entry (booking) date MMDD, mark (C, D, RC, RD), funds code,
// amount, transaction type, reference for the account owner, the bank's
// reference, supplementary details.
func mtLine(v string, cur money.Currency, opened time.Time) (Entry, *fieldErr) {
	first, supp, _ := strings.Cut(v, "\n")
	e := Entry{Currency: cur, Booked: true}
	if len(first) < 6 {
		return e, &fieldErr{"value date", fmt.Errorf("%q is too short for a statement line", first)}
	}
	vd, err := mtDate(first[:6])
	if err != nil {
		return e, &fieldErr{"value date", err}
	}
	e.ValueOn, e.BookedOn = vd, vd
	rest := first[6:]
	if len(rest) >= 4 && isDigits(rest[:4]) {
		bd, err := mtEntryDate(rest[:4], vd)
		if err != nil {
			return e, &fieldErr{"entry date", err}
		}
		e.BookedOn = bd
		rest = rest[4:]
	}
	var sign int64
	switch {
	case strings.HasPrefix(rest, "RC"):
		sign, e.Reversal, rest = -1, true, rest[2:]
	case strings.HasPrefix(rest, "RD"):
		sign, e.Reversal, rest = 1, true, rest[2:]
	case strings.HasPrefix(rest, "C"):
		sign, rest = 1, rest[1:]
	case strings.HasPrefix(rest, "D"):
		sign, rest = -1, rest[1:]
	default:
		return e, &fieldErr{"mark", fmt.Errorf("%q is not C, D, RC or RD", trimTo(rest, 2))}
	}
	if rest != "" && rest[0] >= 'A' && rest[0] <= 'Z' {
		rest = rest[1:] // funds code: the third letter of the currency code
	}
	i := 0
	for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == ',') {
		i++
	}
	amt, err := mtAmount(rest[:i], cur)
	if err != nil {
		return e, &fieldErr{"amount", err}
	}
	e.Amount = sign * amt
	rest = rest[i:]
	if len(rest) < 4 || (rest[0] != 'N' && rest[0] != 'F' && rest[0] != 'S') {
		return e, &fieldErr{"transaction type", fmt.Errorf("%q is not N, F or S and a 3-character code", trimTo(rest, 4))}
	}
	e.Code, rest = rest[:4], rest[4:]
	owner, bank, _ := strings.Cut(rest, "//")
	if len(owner) > 16 || len(bank) > 16 {
		return e, &fieldErr{"reference", fmt.Errorf("a reference is longer than 16 characters")}
	}
	e.Ref = strings.TrimSpace(bank)
	supp = strings.TrimSpace(strings.ReplaceAll(supp, "\n", " "))
	// The account owner's reference and the supplementary details are
	// remittance information too (a provider's trace id may be there).
	if o := strings.TrimSpace(owner); o != "" && o != "NONREF" {
		e.Text = o
	}
	if supp != "" {
		e.Text = strings.TrimSpace(e.Text + " " + supp)
	}
	return e, nil
}

// mtEntryDate reads the booking date MMDD in the year that puts it nearest
// the value date (a value date of 31 December may be booked on 2 January).
func mtEntryDate(mmdd string, value time.Time) (time.Time, error) {
	best := time.Time{}
	for _, y := range []int{value.Year() - 1, value.Year(), value.Year() + 1} {
		t, err := time.Parse("20060102", fmt.Sprintf("%04d%s", y, mmdd))
		if err != nil {
			continue // 29 February of another year
		}
		if best.IsZero() || absDur(t.Sub(value)) < absDur(best.Sub(value)) {
			best = t
		}
	}
	if best.IsZero() {
		return best, fmt.Errorf("%q is not a date (MMDD)", mmdd)
	}
	return best, nil
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// entryKey: the bank's reference, else every column of the line with the
// account's statement text (:86:) and its occurrence on its booking day.
func (m *mt940Reader) entryKey(st *Statement, e Entry) string {
	if e.Ref != "" && e.Ref != "NONREF" {
		// Banks reuse the reference of a booking for its reversal
		// (betterplace's sample: a DR and a CR under one reference), so
		// the reference is the identity together with the direction,
		// amount and booking date it was given.
		return "ref:" + e.Ref + "|" + date(e.BookedOn) + "|" + strconv.FormatInt(e.Amount, 10)
	}
	return m.occ.key(date(e.BookedOn), date(e.ValueOn), strconv.FormatInt(e.Amount, 10), string(e.Currency),
		strconv.FormatBool(e.Reversal), e.Code, e.Text)
}
