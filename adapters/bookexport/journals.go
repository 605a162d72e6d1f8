package bookexport

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// Xero's manual journal import and QuickBooks Online's journal entry
// import: one journal per day and currency (neither file has a currency
// column: Xero's manual journals post in the organisation's base
// currency), its narration naming the currency; each journal balances,
// because every event's postings balance per currency and a journal holds
// whole events.

// XeroColumns are the columns of Xero's manual journal import template
// (https://help.xero.com/nz/ManualJournalsImport): rows with the same
// Narration and Date are the lines of one journal; Amount is a debit when
// positive, a credit when negative.
var XeroColumns = []string{"Narration", "Date", "Description", "AccountCode", "TaxRate", "Amount"}

// QuickBooksColumns are the columns of QuickBooks Online's journal entry
// import (https://quickbooks.intuit.com/learn-support/en-au/help-article/import-export-files/import-journal-entries-quickbooks-online/L4tQBwbs7_AU_en_AU):
// rows with the same Journal No. are one journal entry; a sub-account is
// named Parent:Sub.
var QuickBooksColumns = []string{"Journal No.", "Journal Date", "Account Name", "Description", "Debits", "Credits"}

// XeroMaxLines bounds a Xero journal: the import takes up to 300 lines in
// one template file (the page above), so a day with more is split into
// journals of whole events, each balanced, numbered in the narration.
const XeroMaxLines = 300

// XeroTaxRate is the TaxRate of every line: the ledger's postings carry no
// tax, and Xero requires the column. "Tax Exempt" is the no-tax rate of
// Xero's default tax rates; an organisation whose no-tax rate has another
// name (No VAT, BAS Excluded) renames it on the import's mapping screen.
const XeroTaxRate = "Tax Exempt"

// journalLine is one line of a day's journal.
type journalLine struct {
	account     string // the tool's name
	description string
	amount      int64
}

// journalSink gathers the postings of one day and currency, event by
// event, and hands whole journals of at most max lines to write (one call
// per journal); with max 0 there is no bound, and each event's lines go to
// write as they come (several calls, the same part number).
type journalSink struct {
	name  func(string) (string, error)
	max   int
	write func(date string, c money.Currency, j journalID, lines []journalLine) error
	// deposits, when set, itemises a paid payout's lines for its deposit
	// journal.
	deposits     depositLines
	depositCount int // deposit journals of the day and currency so far
	// The day's deposit journals, written after its journal so that each
	// journal's rows stand together (QuickBooks' day journal is written
	// as it comes); a day's payouts are few.
	pending []pendingJournal
	date    string
	cur     money.Currency
	part    int
	lines   []journalLine       // the journal being filled
	event   []views.ExportEntry // the current event's postings in this currency
	evID    uuid.UUID
	zone    *time.Location
}

// pendingJournal is a deposit journal waiting for its day's journal to end.
type pendingJournal struct {
	id    journalID
	lines []journalLine
}

// depositLines are the settlement lines of the range's paid payouts,
// summed by kind (ExportFilter.Deposits); nil: no deposit journals.
type depositLines map[views.DepositKey][]views.PayoutLineSum

// journalID names a journal of a day and currency: its part (a day split
// into several journals), or, for a payout's deposit journal, the payout.
type journalID struct {
	part     int
	deposit  int // the day's deposit journal number, 0 for the others
	provider string
	payout   string
}

func (s *journalSink) opening(date string, open []views.ExportOpening) error {
	// One journal per currency: each account's balance, against
	// equity:opening_balances per journal (its own balance is the
	// counterpart of the others': every currency sums to zero).
	eq, err := s.name(OpeningBalances)
	if err != nil {
		return err
	}
	open = slices.Clone(open)
	slices.SortStableFunc(open, func(a, b views.ExportOpening) int { return strings.Compare(string(a.Currency), string(b.Currency)) })
	var lines []journalLine
	var sum int64
	part := 0
	emit := func(c money.Currency) error {
		if len(lines) == 0 {
			return nil
		}
		part++
		if sum != 0 {
			lines = append(lines, journalLine{account: eq, description: "opening balances", amount: -sum})
		}
		err := s.write(date, c, journalID{part: part}, lines)
		lines, sum = lines[:0], 0
		return err
	}
	for i, o := range open {
		if i > 0 && o.Currency != open[i-1].Currency {
			if err := emit(open[i-1].Currency); err != nil {
				return err
			}
			part = 0
		}
		if o.Account == OpeningBalances {
			continue
		}
		n, err := s.name(o.Account)
		if err != nil {
			return err
		}
		lines = append(lines, journalLine{account: n, description: "opening balance " + o.Account, amount: o.Balance})
		sum += o.Balance
		if s.max > 0 && len(lines) == s.max-1 {
			if err := emit(o.Currency); err != nil {
				return err
			}
		}
	}
	if len(open) > 0 {
		return emit(open[len(open)-1].Currency)
	}
	return nil
}

func (s *journalSink) entry(e views.ExportEntry) error {
	if e.Date != s.date || e.Currency != s.cur {
		if err := s.endJournal(); err != nil {
			return err
		}
		s.date, s.cur, s.part, s.depositCount = e.Date, e.Currency, 0, 0
	} else if e.EventID != s.evID {
		if err := s.endEvent(); err != nil {
			return err
		}
	}
	s.evID = e.EventID
	s.event = append(s.event, e)
	return nil
}

// eventLines are the current event's journal lines.
func (s *journalSink) eventLines() ([]journalLine, error) {
	out := make([]journalLine, 0, len(s.event))
	for _, e := range s.event {
		n, err := s.name(e.Account)
		if err != nil {
			return nil, err
		}
		out = append(out, journalLine{account: n, description: describe(e, s.zone), amount: e.Amount})
	}
	return out, nil
}

// depositJournal writes a paid payout as a journal of its own, so that
// the accountant matches the bank deposit with it: the amount on the bank
// clearing account (bank:payouts), and against it, instead of the one
// posting on the provider's balance, the payout's settlement lines summed
// by kind (gross, and fees apart), and what its lines do not explain. The
// provider's balance moves by the same amount either way.
func (s *journalSink) depositJournal() (bool, error) {
	if s.deposits == nil || len(s.event) == 0 || s.event[0].EventType != payment.TypePayoutPaid {
		return false, nil
	}
	first := s.event[0]
	payout := payoutID(first)
	balance := ledger.ProviderBalance(first.Provider)
	if payout == "" {
		return false, nil
	}
	sums := s.deposits[views.DepositKey{Provider: first.Provider, PayoutID: payout, Currency: s.cur, Period: first.Period}]
	bal, err := s.name(balance)
	if err != nil {
		return false, err
	}
	var lines []journalLine
	for _, e := range s.event {
		if e.Account != balance {
			n, err := s.name(e.Account)
			if err != nil {
				return false, err
			}
			lines = append(lines, journalLine{account: n, amount: e.Amount,
				description: fmt.Sprintf("deposit of %s payout %s", first.Provider, payout)})
			continue
		}
		rest := e.Amount
		for _, k := range sums {
			lines = append(lines, journalLine{account: bal, amount: -k.Gross,
				description: fmt.Sprintf("payout %s: %d %s lines, gross", payout, k.Lines, k.Kind)})
			if k.Fee != 0 {
				lines = append(lines, journalLine{account: bal, amount: k.Fee,
					description: fmt.Sprintf("payout %s: fees of %d %s lines", payout, k.Lines, k.Kind)})
			}
			rest += k.Net
		}
		if rest != 0 {
			lines = append(lines, journalLine{account: bal, amount: rest,
				description: fmt.Sprintf("payout %s: not itemised by its settlement lines", payout)})
		}
	}
	s.depositCount++
	s.pending = append(s.pending, pendingJournal{id: journalID{deposit: s.depositCount, provider: first.Provider, payout: payout}, lines: lines})
	return true, nil
}

// endEvent moves the current event's lines into the journal, starting a
// new journal of the day first when they would not fit.
func (s *journalSink) endEvent() error {
	if done, err := s.depositJournal(); done || err != nil {
		s.event = s.event[:0]
		return err
	}
	lines, err := s.eventLines()
	if err != nil {
		return err
	}
	if s.max == 0 {
		// Unbounded journals (QuickBooks) are written as they come: a
		// day of a million postings is never held.
		s.event = s.event[:0]
		if len(lines) == 0 {
			return nil
		}
		if s.part == 0 {
			s.part = 1
		}
		return s.write(s.date, s.cur, journalID{part: s.part}, lines)
	}
	if len(s.lines) > 0 && len(s.lines)+len(lines) > s.max {
		if err := s.emit(); err != nil {
			return err
		}
	}
	s.lines = append(s.lines, lines...)
	s.event = s.event[:0]
	return nil
}

func (s *journalSink) emit() error {
	if len(s.lines) == 0 {
		return nil
	}
	s.part++
	err := s.write(s.date, s.cur, journalID{part: s.part}, s.lines)
	s.lines = s.lines[:0]
	return err
}

func (s *journalSink) endJournal() error {
	if err := s.endEvent(); err != nil {
		return err
	}
	if err := s.emit(); err != nil {
		return err
	}
	for _, j := range s.pending {
		if err := s.write(s.date, s.cur, j.id, j.lines); err != nil {
			return err
		}
	}
	s.pending = s.pending[:0]
	return nil
}

// describe is a journal line's description: what happened, to which
// payment or payout, and for a late adjustment its effective date.
func describe(e views.ExportEntry, zone *time.Location) string {
	parts := []string{e.EventType, e.Provider}
	if id := paymentID(e); id != "" {
		parts = append(parts, id)
	} else if id := payoutID(e); id != "" {
		parts = append(parts, "payout "+id)
	}
	d := strings.Join(parts, " ")
	if e.LateAdjustment {
		d += fmt.Sprintf(" (late: effective %s, adjusts %s)", e.EffectiveAt.In(zone).Format(time.DateOnly), e.Adjusts)
	}
	return d
}

// csvSink wraps a journalSink around a CSV writer.
type csvSink struct {
	*journalSink
	cw *csvexport.Writer
}

func (s *csvSink) finish() error {
	if err := s.endJournal(); err != nil {
		return err
	}
	return s.cw.Flush()
}

func newXeroSink(w *bufio.Writer, name func(string) (string, error), zone *time.Location, deposits depositLines) sink {
	cw := csvexport.NewWriter(w, csvColumns(XeroColumns, "Amount")...)
	js := &journalSink{name: name, max: XeroMaxLines, zone: zone, deposits: deposits}
	js.write = func(date string, c money.Currency, j journalID, lines []journalLine) error {
		d, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return err
		}
		narration := fmt.Sprintf("onceledger %s %s journal %d", date, c, j.part)
		if j.deposit > 0 {
			narration = fmt.Sprintf("onceledger %s %s deposit %d: %s payout %s", date, c, j.deposit, j.provider, j.payout)
		}
		day := d.Format("02/01/2006")
		for _, l := range lines {
			if err := cw.Write(narration, day, l.description, l.account, XeroTaxRate, money.FormatMinor(l.amount, c)); err != nil {
				return err
			}
		}
		return nil
	}
	return &csvSink{journalSink: js, cw: cw}
}

func newQuickBooksSink(w *bufio.Writer, name func(string) (string, error), zone *time.Location, deposits depositLines) sink {
	cw := csvexport.NewWriter(w, csvColumns(QuickBooksColumns, "Debits", "Credits")...)
	js := &journalSink{name: name, zone: zone, deposits: deposits}
	js.write = func(date string, c money.Currency, j journalID, lines []journalLine) error {
		d, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return err
		}
		// QuickBooks' journal numbers are short (DocNumber: 21
		// characters): the payout is named in the descriptions.
		no := "OL" + d.Format("20060102") + string(c)
		switch {
		case j.deposit > 0:
			no += "D" + strconv.Itoa(j.deposit)
		case j.part > 1:
			no += "-" + strconv.Itoa(j.part)
		}
		day := d.Format("01/02/2006")
		for _, l := range lines {
			debit, credit := "", ""
			if l.amount >= 0 {
				debit = money.FormatMinor(l.amount, c)
			} else {
				credit = money.FormatMinor(-l.amount, c)
			}
			if err := cw.Write(no, day, l.account, string(c)+": "+l.description, debit, credit); err != nil {
				return err
			}
		}
		return nil
	}
	return &csvSink{journalSink: js, cw: cw}
}

func csvColumns(names []string, numeric ...string) []csvexport.Column {
	out := make([]csvexport.Column, len(names))
	for i, n := range names {
		out[i] = csvexport.Column{Name: n}
		for _, m := range numeric {
			if m == n {
				out[i].Numeric = true
			}
		}
	}
	return out
}
