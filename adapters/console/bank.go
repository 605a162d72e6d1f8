package console

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/csvexport"

	"github.com/onceledger/onceledger/projections/views"
)

// The bank pages read the bank read models (bank_statements,
// bank_statement_lines): the statements imported per account, and an
// account's lines with the payouts each banked (or returned), linked to
// their payout pages; a line that banked nothing waits in suspense.

// BankReader lists the bank statements and an account's lines
// (readmodel.Store).
type BankReader interface {
	BankStatements(ctx context.Context, fn func(views.BankStatement) error) error
	BankLines(ctx context.Context, f views.BankLineFilter, fn func(views.BankLine) error) error
}

// bankDay writes a booking date as the bank does: a calendar date, never
// moved into the console's zone.
func bankDay(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format(time.DateOnly)
}

type bankStatementRow struct {
	views.BankStatement
	CoversDay, OpeningDay, ClosingDay string
}

type bankData struct {
	Statements []bankStatementRow
}

func (c *consoleServer) bank(w http.ResponseWriter, r *http.Request) {
	var rows []bankStatementRow
	err := c.cfg.Read.BankStatements(r.Context(), func(s views.BankStatement) error {
		if len(rows) >= 1000 {
			return nil // the newest thousand: the page is a view, the table the record
		}
		rows = append(rows, bankStatementRow{BankStatement: s, CoversDay: bankDay(s.Covers),
			OpeningDay: bankDay(s.OpeningOn), ClosingDay: bankDay(s.ClosingOn)})
		return nil
	})
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.render(w, r, http.StatusOK, "bank", "Bank statements", bankData{Statements: rows})
}

type bankLineRow struct {
	views.BankLine
	BookedDay string
}

type bankAccountData struct {
	list[bankLineRow]
	Account  string
	Statuses []string
}

func (c *consoleServer) bankAccount(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	account := r.PathValue("account")
	f := views.BankLineFilter{Account: account, Status: p.OneOf("status", views.BankLineStatuses()...)}
	after, asCSV, err := listParams[views.BankLineKey](p)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if asCSV {
		c.exportBankLines(w, r, f)
		return
	}
	f.After, f.Limit = after, c.cfg.PageSize+1
	var rows []bankLineRow
	err = c.cfg.Read.BankLines(r.Context(), f, func(l views.BankLine) error {
		rows = append(rows, bankLineRow{BankLine: l, BookedDay: bankDay(l.BookedOn)})
		return nil
	})
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	filter := filterQuery(p.Values, "status")
	l := newList(Prefix+"/bank/"+account, filter, rows, c.cfg.PageSize, func(x bankLineRow) any { return x.Key() }, after == nil)
	c.render(w, r, http.StatusOK, "bankaccount", "Bank account "+account,
		bankAccountData{list: l, Account: account, Statuses: views.BankLineStatuses()})
}

// exportBankLines streams every matching line of the account.
func (c *consoleServer) exportBankLines(w http.ResponseWriter, r *http.Request, f views.BankLineFilter) {
	out := startCSV(w, "bank-"+f.Account, csvexport.Text("booked_on"), csvexport.Text("reference"), csvexport.Text("line_key"),
		csvexport.Amount("amount"), csvexport.Text("currency"), csvexport.Text("status"), csvexport.Text("payouts"),
		csvexport.Text("description"))
	err := c.cfg.Read.BankLines(r.Context(), f, func(l views.BankLine) error {
		var ps []string
		for _, p := range l.Payouts {
			ps = append(ps, p.Provider+"/"+p.ID)
		}
		return out.Write(bankDay(l.BookedOn), l.Reference, l.LineKey, itoa(l.Amount), l.Currency, l.Status,
			strings.Join(ps, " "), l.Description)
	})
	if err != nil {
		c.cfg.Logger.Error("console: export bank lines", "err", err)
		return // the download ends short; the status is already sent
	}
	_ = out.Flush()
}
