package bankfile

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// CSV statements: a header naming date (YYYY-MM-DD, the booking date),
// amount (a decimal in major units, credits positive, debits with a leading
// "-"), currency, reference (the bank's entry id) and optionally
// description (the remittance text), in any order. Another column is
// refused, naming it: a bank export with more columns is mapped on purpose,
// never guessed at. Every line is booked; a CSV states no balances.

var csvColumns = map[string]bool{"date": true, "amount": true, "currency": true, "reference": true, "description": true}

func parseCSV(r io.Reader, sink Sink) error {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = 0
	head, err := cr.Read()
	if err != nil {
		return csvErr(err, "the header")
	}
	cols := map[string]int{}
	for i, h := range head {
		name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if !csvColumns[name] {
			return perr(lineAt(1), fmt.Sprintf("%q", h), "not a column of a CSV statement (date, amount, currency, reference, description)")
		}
		if _, dup := cols[name]; dup {
			return perr(lineAt(1), fmt.Sprintf("%q", h), "named twice")
		}
		cols[name] = i
	}
	for _, c := range []string{"date", "amount", "currency", "reference"} {
		if _, ok := cols[c]; !ok {
			return perr(lineAt(1), c, "missing from the header")
		}
	}
	st := Statement{Format: CSV, Pos: lineAt(1)}
	if err := sink.begin(&st); err != nil {
		return err
	}
	seen := map[string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return csvErr(err, "a line")
		}
		line, _ := cr.FieldPos(0)
		pos := lineAt(line)
		get := func(c string) string {
			if i, ok := cols[c]; ok {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		day, err := time.Parse(time.DateOnly, get("date"))
		if err != nil {
			return perr(pos, "date", "%q is not a date (YYYY-MM-DD)", get("date"))
		}
		cur, err := currencyOf(get("currency"))
		if err != nil {
			return perr(pos, "currency", "%v", err)
		}
		a := get("amount")
		neg := strings.HasPrefix(a, "-")
		v, err := amountMajor(strings.TrimPrefix(a, "-"), cur)
		if err != nil {
			return perr(pos, "amount", "%v", err)
		}
		if v == 0 {
			return perr(pos, "amount", "zero moves no money")
		}
		if neg {
			v = -v
		}
		ref := get("reference")
		if ref == "" {
			return perr(pos, "reference", "empty: the bank's id of the entry is the line's identity")
		}
		if first, dup := seen[ref]; dup {
			return perr(pos, "reference", "%q is the reference of line %d too", ref, first)
		}
		seen[ref] = line
		e := Entry{Pos: pos, Ref: ref, Key: "ref:" + ref, Amount: v, Currency: cur, BookedOn: day, ValueOn: day,
			Booked: true, Text: get("description")}
		if st.Booked, err = add(st.Booked, v); err != nil {
			return perr(pos, "amount", "%v", err)
		}
		st.Entries++
		if err := sink.entry(&st, e); err != nil {
			return err
		}
	}
	return sink.end(&st)
}

func csvErr(err error, what string) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return perr(lineAt(pe.Line), fmt.Sprintf("column %d", pe.Column), "%v", pe.Err)
	}
	if errors.Is(err, io.EOF) {
		return perr(lineAt(1), "", "empty file: %s is missing", what)
	}
	return err
}
