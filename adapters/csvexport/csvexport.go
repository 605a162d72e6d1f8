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
//
// Every text cell is also quoted, whatever it holds: a spreadsheet that
// splits on ';' (the default in many locales) would otherwise read the cell
// "a;=1+1" as two cells, the second a formula. Inside quotes a separator is
// text. Plain decimal numbers in amount columns are written bare so they
// stay numbers.
package csvexport

import (
	"bufio"
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
	// A 4 KiB buffer passes each full buffer on to w, so rows of a long
	// export leave as they come; its error is sticky.
	buf     *bufio.Writer
	cols    []Column
	started bool
}

// NewWriter returns a writer of the given columns onto w, with CRLF line
// breaks (RFC 4180). Nothing is written before the first Write or Flush.
func NewWriter(w io.Writer, cols ...Column) *Writer {
	return &Writer{buf: bufio.NewWriterSize(w, 4096), cols: cols}
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
	// Column names are ours (identifiers), written bare as readers of
	// the exports expect; anything else goes through the text rule.
	for i, name := range w.Header() {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		if identifier.MatchString(name) {
			w.buf.WriteString(name)
		} else {
			w.quoted(Neutralize(name))
		}
	}
	_, err := w.buf.WriteString("\r\n")
	return err
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// quoted writes s as one quoted field: quotes doubled, line breaks as
// CRLF, a lone carriage return dropped (as encoding/csv writes a CRLF file).
func (w *Writer) quoted(s string) {
	w.buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			w.buf.WriteString(`""`)
		case '\r':
		case '\n':
			w.buf.WriteString("\r\n")
		default:
			w.buf.WriteByte(c)
		}
	}
	w.buf.WriteByte('"')
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
		if i > 0 {
			w.buf.WriteByte(',')
		}
		if c.Numeric && IsNumber(v) {
			w.buf.WriteString(v)
		} else {
			w.quoted(Neutralize(v))
		}
	}
	_, err := w.buf.WriteString("\r\n")
	return err
}

// Flush writes the header if no record was written, then flushes, and
// returns the first error of the export.
func (w *Writer) Flush() error {
	if err := w.start(); err != nil {
		return err
	}
	return w.buf.Flush()
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
