// Package csvexport owns the CSV that leaves the service (the /v1 API's
// ?format=csv and the console's exports): RFC 4180 records whose text cells
// cannot be run as formulas when an accountant opens the file in a
// spreadsheet (OWASP "CSV injection").
//
// Provider-supplied ids, details and payload fields are attacker-controlled:
// a payment id "=HYPERLINK(...)" must reach the spreadsheet as text. A cell
// that begins with '=', '+', '-', '@', a tab or a carriage return is
// prefixed with a single quote, which spreadsheets show as text and do not
// evaluate. Numeric amount columns are exempt, so that -1000 stays a number
// an accountant can sum, but only while the cell really is a plain decimal
// number: anything else in an amount column is neutralized like text.
package csvexport

import (
	"encoding/csv"
	"io"
	"regexp"
)

// Column describes one column of an export.
type Column struct {
	Name string
	// Numeric marks an amount column: its cells are written as they are
	// when they are plain decimal numbers (-1000, 12.50).
	Numeric bool
}

// Text is a text column.
func Text(name string) Column { return Column{Name: name} }

// Amount is a numeric amount column.
func Amount(name string) Column { return Column{Name: name, Numeric: true} }

// Writer writes one export: the header row first, then records.
type Writer struct {
	csv     *csv.Writer
	cols    []Column
	started bool
	rec     []string
}

// NewWriter returns a writer of the given columns onto w, with CRLF line
// breaks (RFC 4180). Nothing is written before the first Write or Flush.
func NewWriter(w io.Writer, cols ...Column) *Writer {
	c := csv.NewWriter(w)
	c.UseCRLF = true
	return &Writer{csv: c, cols: cols, rec: make([]string, len(cols))}
}

// Header returns the column names.
func (w *Writer) Header() []string {
	h := make([]string, len(w.cols))
	for i, c := range w.cols {
		h[i] = c.Name
	}
	return h
}

func (w *Writer) start() error {
	if w.started {
		return nil
	}
	w.started = true
	// Column names are ours, but go through the same rule.
	h := w.Header()
	for i := range h {
		h[i] = Neutralize(h[i])
	}
	return w.csv.Write(h)
}

// Write writes one record, one cell per column (missing cells are empty,
// extra cells are an error of the caller and dropped).
func (w *Writer) Write(cells ...string) error {
	if err := w.start(); err != nil {
		return err
	}
	for i, c := range w.cols {
		v := ""
		if i < len(cells) {
			v = cells[i]
		}
		if !(c.Numeric && IsNumber(v)) {
			v = Neutralize(v)
		}
		w.rec[i] = v
	}
	return w.csv.Write(w.rec)
}

// Flush writes the header if no record was written, then flushes, and
// returns the first error of the export.
func (w *Writer) Flush() error {
	if err := w.start(); err != nil {
		return err
	}
	w.csv.Flush()
	return w.csv.Error()
}

// Neutralize returns s so that a spreadsheet shows it as text: a leading
// '=', '+', '-', '@', tab or carriage return gets a single quote in front.
func Neutralize(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

var number = regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,30})?$`)

// IsNumber reports whether s is a plain decimal number (optional leading
// minus, digits, optional fraction), the only form exempt from Neutralize
// in an amount column.
func IsNumber(s string) bool { return number.MatchString(s) }
