// Package report owns what every settlement-report importer shares: the
// typed parse error naming line and column, the streaming record callback,
// a CSV reader that finds columns by header name, a streaming JSON walker
// that knows line numbers, and exact decimal parsing of the amounts reports
// carry, and the check of a running balance that account statements print
// (Balance). The per-provider formats live beside each webhook adapter
// (adapters/providers/<p>/settlement.go).
//
// Importers stream: they read one record at a time from an io.Reader and hand
// each normalized line to a callback, so memory stays bounded whatever the
// file size. A malformed record stops the parse with a *ParseError; lines
// already handed to the callback are the caller's to discard (an import that
// must be all-or-nothing parses once to validate, then again to import, or
// buffers its writes in one transaction).
package report

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// ErrMalformed is wrapped by every *ParseError, so callers can map any
// report problem to one answer (HTTP 400, exit status 1) with errors.Is.
var ErrMalformed = errors.New("malformed settlement report")

// ParseError says where a report is malformed: the 1-based line of the file
// (for JSON, the line where the offending value starts) and the column (the
// CSV header name as the file spells it, or a JSON path such as
// "data[3].amount"; "" when the problem is the line as a whole).
type ParseError struct {
	Line   int
	Column string
	Err    error
}

func (e *ParseError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d, column %q: %v", e.Line, e.Column, e.Err)
}

// Unwrap returns the cause and ErrMalformed, so both errors.Is(err,
// ErrMalformed) and, say, errors.Is(err, money.ErrInvalidAmount) hold.
func (e *ParseError) Unwrap() []error { return []error{ErrMalformed, e.Err} }

// Errorf returns a *ParseError at line and column.
func Errorf(line int, column, format string, a ...any) *ParseError {
	return &ParseError{Line: line, Column: column, Err: fmt.Errorf(format, a...)}
}

// Record is one parsed report line.
type Record struct {
	Line settlement.Line
	// Raw is the line as the report gave it, for the inbox's audit copy:
	// for JSON the element's bytes as received, for CSV a JSON object of
	// the columns the importer read (header name → cell text).
	Raw []byte
	// Pos is the 1-based line of the file the record starts on.
	Pos int
}

// Func receives each record in file order. Returning an error stops the
// parse; Parse returns that error unchanged.
type Func func(Record) error

// Options tune an importer. The zero value is right for files as the
// providers publish them by default.
type Options struct {
	// DecimalSeparator of major-unit amounts (Stripe's report runs take a
	// decimal_separator parameter). 0 means '.'.
	DecimalSeparator byte
	// PayoutID is given to lines that carry none, for inputs that do not
	// say which payout they list (a Stripe Balance Transactions list
	// fetched with ?payout=po_…: the list object does not repeat the
	// filter). Lines that name their payout keep it.
	PayoutID string
	// Link, when set, links a line whose report does not name its payment
	// (a Stripe report without payment_intent_id) through the ids the
	// ledger already knows: it returns the payment key of the line whose
	// dedup key is lineKey and whose capture (charge) is captureID, ok
	// false when the ledger knows neither (reportimport.Importer sets it).
	Link func(lineKey, captureID string) (paymentKey string, ok bool, err error)
	// Stated, when set, receives each balance the file states (stated.go),
	// in file order; nil: importers skip them.
	Stated func(Stated) error
	// Zone is the time zone of a report's dates where the file does not
	// say it (Stripe's balance summary: the report run's timezone); nil:
	// UTC.
	Zone *time.Location
}

// Major parses an exact major-unit decimal ("10.50", "-3.2", ".91") in c
// into minor units. Reports in the wild drop the leading zero (Adyen:
// ".91"); that is accepted. Everything money.ParseMajor refuses is refused:
// rounding, exponents, thousands separators. sep is the decimal separator
// (0 or '.', or ',').
func Major(s string, c money.Currency, sep byte) (int64, error) {
	if sep != 0 && sep != '.' {
		if strings.IndexByte(s, '.') >= 0 {
			return 0, fmt.Errorf("%w: %q: '.' where the decimal separator is %q", money.ErrInvalidAmount, s, sep)
		}
		s = strings.Replace(s, string(sep), ".", 1)
	}
	switch {
	case strings.HasPrefix(s, "."):
		s = "0" + s
	case strings.HasPrefix(s, "-."):
		s = "-0" + s[1:]
	}
	v, err := money.ParseMajor(s, c)
	if err != nil {
		return 0, err
	}
	if v > settlement.MaxAmount || v < -settlement.MaxAmount {
		return 0, fmt.Errorf("%w: %q is beyond 10^15 minor units", money.ErrInvalidAmount, s)
	}
	return v, nil
}

// Currency parses a currency code in any case.
func Currency(s string) (money.Currency, error) {
	return money.ParseCurrency(strings.TrimSpace(s))
}

// NormalizeHeader is how header names are compared: surrounding space and a
// UTF-8 byte order mark removed, runs of white space folded to one space,
// lower case. PayPal's STL header has spelt "Transaction  Debit or Credit"
// with two spaces in some versions and one in others.
func NormalizeHeader(s string) string {
	s = strings.TrimPrefix(s, "\uFEFF")
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// Parser is the signature every provider's importer has
// (stripe.ParseSettlement, adyen.ParseSettlement, paypal.ParseSettlement,
// square.ParseSettlement): stream the records of one report file from r to
// fn, or stop at the first *ParseError.
type Parser func(r io.Reader, opt Options, fn Func) error
