// Package bookexport writes the journal of a date range in the import
// formats of the accountants' own tools: beancount, hledger, Xero's manual
// journal CSV and QuickBooks Online's journal entry CSV (GET
// /v1/export/{format}, `onceledger export`). Entries are dated where they
// are booked (an entry at its effective date in the reporting zone, a late
// adjustment at the first day of the period it is booked into), so an
// export of a closed period is the same file whenever it is made; an
// export whose range starts after the first entry opens with the balances
// carried in. Rows stream from the read model to the writer: a year of
// entries never sits in memory.
package bookexport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections/views"
)

// Format is an export format.
type Format string

// The formats.
const (
	Beancount  Format = "beancount"
	Hledger    Format = "hledger"
	Xero       Format = "xero"
	QuickBooks Format = "quickbooks"
)

// Formats lists every format.
var Formats = []Format{Beancount, Hledger, Xero, QuickBooks}

// ErrUnknownFormat: not one of Formats.
var ErrUnknownFormat = errors.New("unknown export format")

// ErrBadRange: the range is missing or out of order.
var ErrBadRange = errors.New("bad export range")

// ParseFormat reads a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w %q: want beancount, hledger, xero or quickbooks", ErrUnknownFormat, s)
}

// ContentType is the media type of f's files.
func (f Format) ContentType() string {
	switch f {
	case Xero, QuickBooks:
		return "text/csv; charset=utf-8; header=present"
	}
	return "text/plain; charset=utf-8"
}

// Extension is the file name extension of f's files.
func (f Format) Extension() string {
	switch f {
	case Beancount:
		return "beancount"
	case Hledger:
		return "journal"
	}
	return "csv"
}

// Source reads the journal by accounting date (readmodel.Store).
type Source interface {
	// ExportAccounts lists the accounts with an entry effective before
	// before: every account an export to before names (a late
	// adjustment's effective time precedes its booking), and none first
	// used after it.
	ExportAccounts(ctx context.Context, before time.Time) ([]string, error)
	ExportJournal(ctx context.Context, f views.ExportFilter,
		opening func([]views.ExportOpening) error, entry func(views.ExportEntry) error) error
}

// Assertion is a balance assertion as an export shows it: a balance a
// provider or bank stated for one account and currency at one moment. It
// carries no "the ledger agreed": that changes when a late fact arrives,
// and an export compares the stated balance with its own figures.
type Assertion struct {
	Account  string
	Currency money.Currency
	AsOf     time.Time
	Stated   int64
	Provider string
	Source   string
}

// Assertions reads the balance assertions whose as_of lies in [from, to]
// (the balance assertions' read side), sorted by as_of, account and
// currency.
type Assertions interface {
	ExportAssertions(ctx context.Context, from, to time.Time) ([]Assertion, error)
}

// Exporter writes exports.
type Exporter struct {
	Source Source
	// Deposits writes each paid payout as a deposit journal of its own
	// (Xero, QuickBooks), itemised by its settlement lines (the Source
	// reads them, ExportFilter.Deposits); false: a payout is a line of its
	// day's journal like any other event.
	Deposits bool
	// Assertions, when set, adds the balance assertions of the range
	// (beancount `balance` directives, hledger balance assertions, or
	// comments); nil: none.
	Assertions Assertions
	// Accounts names the accounts (LoadTable); nil: the default table.
	Accounts *Table
	// Zone is the reporting time zone (ONCELEDGER_REPORTING_TZ); nil: UTC.
	Zone *time.Location
}

// Request is one export: the entries whose accounting date lies in
// [From, To), dates in the reporting zone.
type Request struct {
	Format   Format
	From, To time.Time
}

// Check refuses a request that cannot be answered, naming the parameter.
func (r Request) Check() error {
	if _, err := ParseFormat(string(r.Format)); err != nil {
		return fmt.Errorf("format: %w", err)
	}
	switch {
	case r.From.IsZero():
		return fmt.Errorf("%w: from: required (a date like 2026-11-01)", ErrBadRange)
	case r.To.IsZero():
		return fmt.Errorf("%w: to: required (a date like 2026-12-01, the day after the last)", ErrBadRange)
	case !r.To.After(r.From):
		return fmt.Errorf("%w: to: must be after from", ErrBadRange)
	}
	return nil
}

// sink is one format's writer: the opening balances, then each entry in
// the source's order, then the end.
type sink interface {
	opening(date string, open []views.ExportOpening) error
	entry(e views.ExportEntry) error
	finish() error
}

// Export writes the export of req onto w. Every account the books hold is
// named before anything is written, so that an account the table cannot
// name fails the export with nothing written (ErrUnmappedAccount).
func (x *Exporter) Export(ctx context.Context, req Request, w io.Writer) error {
	if err := req.Check(); err != nil {
		return err
	}
	zone := x.Zone
	if zone == nil {
		zone = time.UTC
	}
	table := x.Accounts
	if table == nil {
		table = DefaultTable()
	}
	accounts, err := x.Source.ExportAccounts(ctx, midnight(req.To, zone))
	if err != nil {
		return err
	}
	names := map[string]string{}
	defaults := map[string]string{} // a default name → the account it names
	for _, a := range append(accounts, OpeningBalances) {
		n, err := table.Name(req.Format, a)
		if err != nil {
			return err
		}
		names[a] = n
		if table.overridden(req.Format, a) {
			continue // several accounts may be mapped to one on purpose
		}
		if other, dup := defaults[n]; dup && other != a {
			return &UnmappedError{Format: req.Format, Account: a,
				Reason: fmt.Sprintf("its default name %q is also %s's: name one of them in the file", n, other)}
		}
		defaults[n] = a
	}
	name := func(a string) (string, error) {
		if n, ok := names[a]; ok {
			return n, nil
		}
		// An account first used after the list was read.
		n, err := table.Name(req.Format, a)
		if err == nil {
			names[a] = n
		}
		return n, err
	}
	from := midnight(req.From, zone)
	to := midnight(req.To, zone)
	var asserts []Assertion
	if x.Assertions != nil && (req.Format == Beancount || req.Format == Hledger) {
		if asserts, err = x.Assertions.ExportAssertions(ctx, from, to); err != nil {
			return err
		}
	}
	csv := req.Format == Xero || req.Format == QuickBooks
	f := views.ExportFilter{From: from, To: to, Zone: zone, ByCurrency: csv}
	var deposits depositLines // filled before the first entry
	if x.Deposits && csv {
		deposits = depositLines{}
		f.Deposits = func(ds []views.ExportDeposit) error {
			for _, d := range ds {
				deposits[d.DepositKey] = append(deposits[d.DepositKey], d.PayoutLineSum)
			}
			return nil
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	head := header{from: from, to: to, zone: zone}
	var s sink
	switch req.Format {
	case Beancount:
		s = newLedgerSink(bw, name, head, true, asserts)
	case Hledger:
		s = newLedgerSink(bw, name, head, false, asserts)
	case Xero:
		s = newXeroSink(bw, name, zone, deposits)
	case QuickBooks:
		s = newQuickBooksSink(bw, name, zone, deposits)
	}
	openDate := from.AddDate(0, 0, -1).Format(time.DateOnly)
	err = x.Source.ExportJournal(ctx, f, func(open []views.ExportOpening) error {
		return s.opening(openDate, open)
	}, s.entry)
	if err == nil {
		err = s.finish()
	}
	if err == nil {
		err = bw.Flush()
	}
	return err
}

// midnight is the start of t's day in zone.
func midnight(t time.Time, zone *time.Location) time.Time {
	y, m, d := t.In(zone).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, zone)
}

// header is what the text formats say about themselves at the top.
type header struct {
	from, to time.Time
	zone     *time.Location
}
