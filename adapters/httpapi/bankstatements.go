package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/projections/views"
)

// BankImportSummary is the answer of POST /v1/bank-statements, as for
// settlement files (lines, new, duplicates, conflicts), with what only a
// statement has: pending entries (recorded nothing), statements, and the
// payouts newly told to the account.
type BankImportSummary struct {
	Format     string `json:"format"`
	Lines      int    `json:"lines"`
	New        int    `json:"new"`
	Duplicates int    `json:"duplicates"`
	Conflicts  int    `json:"conflicts"`
	Pending    int    `json:"pending"`
	Statements int    `json:"statements"`
	Payouts    int    `json:"payouts"`
}

// BankImporter imports one statement file into a bank account
// (adapters/bankimport, wired in cmd/onceledger/app). A malformed file is
// an error wrapping bankfile.ErrMalformed naming line (or XML path) and
// field, with nothing imported.
type BankImporter interface {
	ImportBankStatement(ctx context.Context, account string, src ReportSource) (BankImportSummary, error)
}

// registerBankStatements mounts POST /v1/bank-statements (admin).
func (s *server) registerBankStatements(v1 *mux.Router) {
	v1.Handle("/bank-statements", acting(s.importBankStatement)).Methods(http.MethodPost)
}

// POST /v1/bank-statements?account=NAME: the body is one statement file,
// spooled to a temporary file (bounded memory, bounded size:
// MaxReportBytes, as settlement uploads), validated whole, then imported.
func (s *server) importBankStatement(w http.ResponseWriter, r *http.Request) {
	if s.cfg.BankStatements == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	account := r.URL.Query().Get("account")
	if account == "" {
		fail(w, fmt.Errorf("%w: account: required (the bank account's name, bank:NAME)", errBadParameter))
		return
	}
	src, cleanup, ok := s.spoolUpload(w, r, "onceledger-statement-*") // settlements.go
	if !ok {
		return
	}
	defer cleanup()
	sum, err := s.cfg.BankStatements.ImportBankStatement(r.Context(), account, src)
	if err != nil {
		if statusFor(err) >= 500 {
			s.queryError(w, r, err)
			return
		}
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

// payoutBankFields are a payout's bank fields in GET /v1/payouts:
// banked, banked_at (the booking date of the line that banked it) and
// bank_line {"account","reference","booked_on","amount"}; a payout the
// bank returned is not banked.
func payoutBankFields(p views.Payout) []field {
	l := p.BankLine
	if l == nil {
		return []field{{name: "banked", json: false, cell: "false"}, {name: "banked_at"}, {name: "bank_line"}}
	}
	day := l.BookedOn.Format(time.DateOnly)
	type bankLine struct {
		Account   string `json:"account"`
		Reference string `json:"reference"`
		BookedOn  string `json:"booked_on"`
		Amount    int64  `json:"amount"`
	}
	return []field{{name: "banked", json: true, cell: "true"}, {name: "banked_at", json: day, cell: day},
		{name: "bank_line", json: bankLine{l.Account, l.Reference, day, l.Amount}, cell: l.Account + " " + l.Reference}}
}

// bankedParam is ?banked=true|false.
func bankedParam(q *query) *bool {
	switch v := q.Get("banked"); v {
	case "":
		return nil
	case "true", "false":
		b := v == "true"
		return &b
	default:
		q.Fail("banked: %q is not true or false", v)
		return nil
	}
}
