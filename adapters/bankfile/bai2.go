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

// BAI2 (Cash Management Balance Reporting Specifications, version 2): 01
// file header, 02 group header (as-of date, currency), 03 account (currency,
// summaries), 16 transaction detail, 88 continuation of the record before
// it, 49 account trailer, 98 group trailer, 99 file trailer. Amounts carry
// the currency's implied decimals (USD 2, JPY 0); a detail's amount is
// unsigned, its type code says the direction (100–399 credit, 400–699
// debit; 890 carries no money). Checks, exactly: each 49 total is the sum
// of the amounts of its account's 03 and 16 records as written and its
// count covers its records from 03 to 49 (88s included); 98 and 99 agree
// with their groups (totals, accounts or groups, records).

type baiRecord struct {
	code   string
	fields []string
	line   int
	phys   int // physical records (lines), 88s included
}

type baiReader struct {
	sc      *bufio.Scanner
	line    int
	pending *baiRecord
	sink    Sink
	occ     occurrences
}

func parseBAI2(r io.Reader, sink Sink) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), MaxLineBytes)
	b := &baiReader{sc: sc, sink: sink, occ: occurrences{}}
	return b.file()
}

// record returns the next logical record: a physical one with its 88
// continuations appended; nil at the end of the file.
func (b *baiReader) record() (*baiRecord, error) {
	rec := b.pending
	b.pending = nil
	for b.sc.Scan() {
		b.line++
		t := strings.TrimRight(b.sc.Text(), "\r ")
		if t == "" {
			if rec == nil {
				continue
			}
			return nil, perr(lineAt(b.line), "", "an empty line inside a BAI2 file")
		}
		code, rest, _ := strings.Cut(t, ",")
		if code == "88" {
			if rec == nil {
				return nil, perr(lineAt(b.line), "88", "a continuation with no record before it")
			}
			rec.fields = append(rec.fields, baiFields(rest, rec.code)...)
			rec.phys++
			continue
		}
		next := &baiRecord{code: code, fields: baiFields(rest, code), line: b.line, phys: 1}
		if rec != nil {
			b.pending = next
			return rec, nil
		}
		rec = next
	}
	if err := b.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, perr(lineAt(b.line+1), "", "a line longer than %d bytes", MaxLineBytes)
		}
		return nil, err
	}
	return rec, nil
}

// baiFields splits a record's fields: a "/" ends the record (16's text runs
// to the end of the line, and a trailing "/" there is taken off).
func baiFields(rest, code string) []string {
	if code == "16" {
		parts := strings.SplitN(rest, ",", 6)
		if len(parts) == 6 {
			parts[5] = strings.TrimRight(strings.TrimSuffix(strings.TrimRight(parts[5], " "), "/"), " ")
		} else if n := len(parts); n > 0 {
			parts[n-1] = strings.TrimSuffix(parts[n-1], "/")
		}
		return parts
	}
	rest, _, _ = strings.Cut(rest, "/")
	return strings.Split(rest, ",")
}

func (r *baiRecord) field(i int) string {
	if i < len(r.fields) {
		return strings.TrimSpace(r.fields[i])
	}
	return ""
}

func (r *baiRecord) pos() string { return lineAt(r.line) }

func (r *baiRecord) count(i int, name string) (int64, error) {
	v := r.field(i)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, perr(r.pos(), r.code+" "+name, "%q is not a count", v)
	}
	return n, nil
}

// total reads a signed control total in minor units, as written.
func (r *baiRecord) total(i int, name string) (int64, error) {
	v := r.field(i)
	s := strings.TrimPrefix(strings.TrimPrefix(v, "+"), "-")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || !isDigits(s) {
		return 0, perr(r.pos(), r.code+" "+name, "%q is not an amount (implied decimals, optional sign)", v)
	}
	if strings.HasPrefix(v, "-") {
		n = -n
	}
	return n, nil
}

func (b *baiReader) file() error {
	h, err := b.record()
	if err != nil {
		return err
	}
	if h == nil || h.code != "01" {
		return perr(lineAt(1), "01", "a BAI2 file starts with its 01 file header")
	}
	if v := h.field(7); v != "2" {
		return perr(h.pos(), "01 version", "%q: only BAI version 2 is read", v)
	}
	var groups, records, total int64 = 0, 1, 0
	for {
		r, err := b.record()
		if err != nil {
			return err
		}
		if r == nil {
			return perr(lineAt(b.line), "99", "the file ends without its 99 file trailer")
		}
		switch r.code {
		case "02":
			gt, gr, err := b.group(r, h.field(4))
			if err != nil {
				return err
			}
			groups++
			records += gr
			if total, err = add(total, gt); err != nil {
				return perr(r.pos(), "99 total", "%v", err)
			}
		case "99":
			records += int64(r.phys)
			want, err := r.total(0, "total")
			if err != nil {
				return err
			}
			if want != total {
				return perr(r.pos(), "99 total", "says %d, the groups' totals sum to %d", want, total)
			}
			if n, err := r.count(1, "groups"); err != nil {
				return err
			} else if n != groups {
				return perr(r.pos(), "99 groups", "says %d, the file has %d", n, groups)
			}
			if n, err := r.count(2, "records"); err != nil {
				return err
			} else if n != records {
				return perr(r.pos(), "99 records", "says %d, the file has %d", n, records)
			}
			if extra, err := b.record(); err != nil {
				return err
			} else if extra != nil {
				return perr(extra.pos(), extra.code, "a record after the 99 file trailer")
			}
			return nil
		default:
			return perr(r.pos(), r.code, "expected a 02 group header or the 99 file trailer")
		}
	}
}

// group reads a group from its 02 to its 98; it returns the group's total
// and its physical records.
func (b *baiReader) group(g *baiRecord, fileID string) (int64, int64, error) {
	asOf, err := time.Parse("060102", g.field(3))
	if err != nil {
		return 0, 0, perr(g.pos(), "02 as-of date", "%q is not a date (YYMMDD)", g.field(3))
	}
	cur := money.Currency("USD") // the specification's default
	if v := g.field(5); v != "" {
		if cur, err = currencyOf(v); err != nil {
			return 0, 0, perr(g.pos(), "02 currency", "%v", err)
		}
	}
	var accounts, records, total int64 = 0, int64(g.phys), 0
	for {
		r, err := b.record()
		if err != nil {
			return 0, 0, err
		}
		if r == nil {
			return 0, 0, perr(lineAt(b.line), "98", "the file ends inside a group")
		}
		switch r.code {
		case "03":
			at, ar, err := b.account(r, asOf, cur, fileID)
			if err != nil {
				return 0, 0, err
			}
			accounts++
			records += ar
			if total, err = add(total, at); err != nil {
				return 0, 0, perr(r.pos(), "98 total", "%v", err)
			}
		case "98":
			records += int64(r.phys)
			want, err := r.total(0, "total")
			if err != nil {
				return 0, 0, err
			}
			if want != total {
				return 0, 0, perr(r.pos(), "98 total", "says %d, the accounts' totals sum to %d", want, total)
			}
			if n, err := r.count(1, "accounts"); err != nil {
				return 0, 0, err
			} else if n != accounts {
				return 0, 0, perr(r.pos(), "98 accounts", "says %d, the group has %d", n, accounts)
			}
			if n, err := r.count(2, "records"); err != nil {
				return 0, 0, err
			} else if n != records {
				return 0, 0, perr(r.pos(), "98 records", "says %d, the group has %d", n, records)
			}
			return total, records, nil
		default:
			return 0, 0, perr(r.pos(), r.code, "expected a 03 account or the 98 group trailer")
		}
	}
}

// baiFunds returns how many fields follow a funds type code.
func baiFunds(r *baiRecord, i int, field string) (int, error) {
	switch t := r.field(i); t {
	case "", "Z", "0", "1", "2":
		return 0, nil
	case "V":
		return 2, nil // value date, value time
	case "S":
		return 3, nil // immediate, one-day, two-or-more-day amounts
	case "D":
		n, err := strconv.Atoi(r.field(i + 1))
		if err != nil || n < 0 || n > 1000 {
			return 0, perr(r.pos(), field, "distributed availability with %q distributions", r.field(i+1))
		}
		return 1 + 2*n, nil
	default:
		return 0, perr(r.pos(), field, "%q is not a funds type (Z, 0, 1, 2, V, S, D)", t)
	}
}

// account reads an account from its 03 to its 49: the statement of one
// account for the group's as-of date. It returns the account's control
// total as written and its physical records.
func (b *baiReader) account(r *baiRecord, asOf time.Time, groupCur money.Currency, fileID string) (int64, int64, error) {
	st := Statement{Format: BAI2, Pos: r.pos(), Account: r.field(0), Currency: groupCur, ID: fileID}
	if st.Account == "" {
		return 0, 0, perr(r.pos(), "03 account", "empty")
	}
	if v := r.field(1); v != "" {
		c, err := currencyOf(v)
		if err != nil {
			return 0, 0, perr(r.pos(), "03 currency", "%v", err)
		}
		st.Currency = c
	}
	var total int64
	for i := 2; i+1 < len(r.fields); {
		code, amt := r.field(i), r.field(i+1)
		if code == "" && amt == "" && i+2 >= len(r.fields) {
			break
		}
		v, err := baiSigned(amt, st.Currency)
		if err != nil {
			return 0, 0, perr(r.pos(), "03 amount of "+code, "%v", err)
		}
		if total, err = add(total, v); err != nil {
			return 0, 0, perr(r.pos(), "03 amount of "+code, "%v", err)
		}
		switch code {
		case "010", "040":
			if st.Opening == nil || code == "010" {
				st.Opening = &Balance{Amount: v, Date: asOf.AddDate(0, 0, -1), Code: code}
			}
		case "015", "045":
			if st.Closing == nil || code == "015" {
				st.Closing = &Balance{Amount: v, Date: asOf, Code: code}
			}
		}
		extra, err := baiFunds(r, i+3, "03 funds type of "+code)
		if err != nil {
			return 0, 0, err
		}
		i += 4 + extra // type, amount, item count, funds type, its fields
	}
	if err := b.sink.begin(&st); err != nil {
		return 0, 0, err
	}
	records := int64(r.phys)
	for {
		d, err := b.record()
		if err != nil {
			return 0, 0, err
		}
		if d == nil {
			return 0, 0, perr(lineAt(b.line), "49", "the file ends inside an account")
		}
		switch d.code {
		case "16":
			records += int64(d.phys)
			v, err := b.detail(&st, d, asOf)
			if err != nil {
				return 0, 0, err
			}
			if total, err = add(total, v); err != nil {
				return 0, 0, perr(d.pos(), "16 amount", "%v", err)
			}
		case "49":
			records += int64(d.phys)
			want, err := d.total(0, "total")
			if err != nil {
				return 0, 0, err
			}
			if want != total {
				return 0, 0, perr(d.pos(), "49 total", "says %d, the account's 03 and 16 amounts sum to %d", want, total)
			}
			if n, err := d.count(1, "records"); err != nil {
				return 0, 0, err
			} else if n != records {
				return 0, 0, perr(d.pos(), "49 records", "says %d, the account has %d (03 to 49)", n, records)
			}
			if err := b.sink.end(&st); err != nil {
				return 0, 0, err
			}
			return total, records, nil
		default:
			return 0, 0, perr(d.pos(), d.code, "expected a 16 detail or the 49 account trailer")
		}
	}
}

// baiSigned reads an amount with implied decimals and an optional sign; ""
// is no amount (zero).
func baiSigned(v string, c money.Currency) (int64, error) {
	if v == "" {
		return 0, nil
	}
	neg := strings.HasPrefix(v, "-")
	s := strings.TrimPrefix(strings.TrimPrefix(v, "+"), "-")
	if !isDigits(s) || len(s) > 18 {
		return 0, fmt.Errorf("%w: %q is not an amount in %s minor units", money.ErrInvalidAmount, v, c)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > maxAmount {
		return 0, fmt.Errorf("%w: %q is out of range", money.ErrInvalidAmount, v)
	}
	if neg {
		n = -n
	}
	return n, nil
}

// baiReturnCodes are the detail type codes of returned items (BAI2
// appendix A: "Returned Item" credits and debits, ACH returns).
var baiReturnCodes = map[string]bool{
	"172": true, "173": true, "174": true, "176": true, "178": true, "179": true,
	"272": true, "273": true, "274": true, "276": true,
	"472": true, "473": true, "474": true, "476": true, "478": true,
	"555": true, "556": true, "557": true, "558": true,
}

// detail reads a 16 record; it returns its amount as written (for the 49
// total).
func (b *baiReader) detail(st *Statement, d *baiRecord, asOf time.Time) (int64, error) {
	code := d.field(0)
	n, err := strconv.Atoi(code)
	if err != nil || len(code) != 3 {
		return 0, perr(d.pos(), "16 type code", "%q is not a type code", code)
	}
	amt := d.field(1)
	if strings.HasPrefix(amt, "+") || strings.HasPrefix(amt, "-") {
		return 0, perr(d.pos(), "16 amount", "%q is signed; a detail's type code gives its direction", amt)
	}
	v, err := baiSigned(amt, st.Currency)
	if err != nil {
		return 0, perr(d.pos(), "16 amount", "%v", err)
	}
	extra, err := baiFunds(d, 2, "16 funds type")
	if err != nil {
		return 0, err
	}
	// The fields left: bank reference, customer reference, text. The text
	// is everything after them (it may hold commas, and 88s continue it).
	if len(d.fields) < 4 {
		return 0, perr(d.pos(), "16", "%d fields; a detail has its type, amount, funds type, bank and customer references and text", len(d.fields))
	}
	value := asOf
	if d.field(2) == "V" {
		if value, err = time.Parse("060102", d.field(3)); err != nil {
			return 0, perr(d.pos(), "16 value date", "%q is not a date (YYMMDD)", d.field(3))
		}
	}
	// Re-split what follows the funds type: fields was cut into six for
	// the text, so a funds type with fields shifts the references.
	rest := strings.Join(d.fields[3:], ",")
	parts := strings.SplitN(rest, ",", extra+3)
	if len(parts) < extra+2 {
		return 0, perr(d.pos(), "16", "missing the bank and customer references")
	}
	bankRef, custRef := strings.TrimSpace(parts[extra]), strings.TrimSpace(parts[extra+1])
	text := ""
	if len(parts) > extra+2 {
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimRight(parts[extra+2], " "), "/"))
	}
	var sign int64
	switch {
	case n >= 100 && n <= 399:
		sign = 1
	case n >= 400 && n <= 699:
		sign = -1
	case n == 890:
		if v != 0 {
			return 0, perr(d.pos(), "16 amount", "type 890 is non-monetary and carries an amount")
		}
		return 0, nil
	default:
		return 0, perr(d.pos(), "16 type code", "%s is not a credit (100–399) or debit (400–699) detail", code)
	}
	if v == 0 && amt == "" {
		return 0, perr(d.pos(), "16 amount", "missing")
	}
	e := Entry{Pos: d.pos(), Amount: sign * v, Currency: st.Currency, BookedOn: asOf, ValueOn: value, Booked: true,
		Reversal: baiReturnCodes[code], Code: code, Ref: bankRef}
	e.Text = strings.TrimSpace(strings.Join(nonEmpty(custRef, text), " "))
	if e.Ref != "" {
		e.Key = "ref:" + e.Ref
	} else {
		e.Key = b.occ.key(st.Account, date(e.BookedOn), date(e.ValueOn), strconv.FormatInt(e.Amount, 10), string(e.Currency),
			code, custRef, text)
	}
	b2, err := add(st.Booked, e.Amount)
	if err != nil {
		return 0, perr(d.pos(), "16 amount", "%v", err)
	}
	st.Booked = b2
	st.Entries++
	return v, b.sink.entry(st, e)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
