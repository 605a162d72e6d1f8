package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections/views"
)

// SettlementQuery reads the settlement read models for GET /v1/payouts…
// (readmodel.Store).
type SettlementQuery interface {
	Payouts(ctx context.Context, f views.PayoutFilter, fn func(views.Payout) error) error
	Payout(ctx context.Context, provider, payoutID string) (views.Payout, bool, error)
	SettlementLines(ctx context.Context, provider, payoutID string, fn func(views.SettlementLine) error) error
}

// ReportSource opens the uploaded report; the importer reads it twice
// (validate whole, then import).
type ReportSource func() (io.ReadCloser, error)

// ImportSummary is the answer of POST /v1/settlements/{provider}.
type ImportSummary struct {
	Lines      int `json:"lines"`
	New        int `json:"new"`
	Duplicates int `json:"duplicates"`
	Conflicts  int `json:"conflicts"` // seen before with other facts: a changed line
}

// SettlementImporter imports one report file of a provider
// (adapters/reportimport, wired in cmd/onceledger/app). A malformed file
// is an error wrapping report.ErrMalformed naming line and column, with
// nothing imported; a provider without an importer wraps
// ErrNoReportImporter.
type SettlementImporter interface {
	ImportReport(ctx context.Context, provider string, src ReportSource) (ImportSummary, error)
}

// ErrNoReportImporter: the provider has no settlement report importer (404).
var ErrNoReportImporter = errors.New("no settlement report importer for this provider")

// DefaultMaxReportBytes bounds an uploaded report (Config.MaxReportBytes).
const DefaultMaxReportBytes = 1 << 30

// registerSettlements mounts the settlement endpoints on the /v1 router
// (behind its bearer check).
func (s *server) registerSettlements(v1 *mux.Router) {
	// An upload acts on the ledger: admin tokens only (403 for a read token).
	v1.Handle("/settlements/{provider}", acting(s.importSettlement)).Methods(http.MethodPost)
	v1.HandleFunc("/payouts", s.queryPayouts).Methods(http.MethodGet)
	// A payout id may hold '/' (Adyen's Merchant/41/EUR): the id is the
	// rest of the path, sent escaped (Merchant%2F41%2FEUR) or not; the
	// router matches the decoded path, so both forms reach the payout.
	v1.HandleFunc("/payouts/{provider}/{payout_id:.+}", s.queryPayout).Methods(http.MethodGet)
}

// POST /v1/settlements/{provider}: the body is one report file. It is
// spooled to a temporary file (bounded memory whatever its size), validated
// whole, then imported line by line through the inbox gate.
func (s *server) importSettlement(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Settlements == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	src, cleanup, ok := s.spoolUpload(w, r, "onceledger-report-*")
	if !ok {
		return
	}
	defer cleanup()
	sum, err := s.importIn(r, src) // balances.go: ?timezone=
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

// settlementQuery answers the first bad parameter of q, or 503 when the
// settlement read side is not configured.
func (s *server) settlementQuery(w http.ResponseWriter, r *http.Request, q *query) (SettlementQuery, bool) {
	if q.Err() != nil {
		s.queryError(w, r, q.Err())
		return nil, false
	}
	if s.cfg.SettlementQuery == nil {
		s.queryError(w, r, errQueryNotConfigured)
		return nil, false
	}
	return s.cfg.SettlementQuery, true
}

// payoutRecord is the one description of a payout in GET /v1/payouts and
// /v1/payouts/{provider}/{payout_id}, JSON and CSV.
func payoutRecord(p views.Payout) record {
	c := money.Currency(p.Currency)
	dec := func(v int64) string {
		if c == "" {
			return ""
		}
		return money.FormatMinor(v, c)
	}
	rec := record{textField("provider", p.Provider), textField("payout_id", p.PayoutID), textField("status", p.Status),
		intField("amount", p.Amount), decimalField("amount_decimal", dec(p.Amount)), optText("currency", p.Currency),
		optTime("arrival_date", p.ArrivalDate), intField("line_count", p.LineCount), intField("lines_net", p.LinesNet),
		intField("difference", p.Difference), decimalField("difference_decimal", dec(p.Difference)),
		timeField("updated_at", p.UpdatedAt)}
	return append(rec, payoutBankFields(p)...) // bankstatements.go
}

// lineRecord is the one description of a settlement line in GET
// /v1/payouts/{provider}/{payout_id}, JSON and CSV.
func lineRecord(l views.SettlementLine) record {
	return record{textField("line_key", l.LineKey), textField("kind", l.Kind), textField("source_type", l.SourceType),
		textField("line_id", l.LineID), textField("payment_id", l.PaymentID), textField("capture_id", l.CaptureID),
		textField("refund_id", l.RefundID), textField("dispute_id", l.DisputeID), intField("gross", l.Gross),
		intField("fee", l.Fee), intField("net", l.Net), textField("currency", l.Currency),
		intField("original_amount", l.OriginalAmount), textField("original_currency", l.OriginalCurrency),
		textField("exchange_rate", l.ExchangeRate), timeField("occurred_at", l.OccurredAt),
		optTime("available_on", l.AvailableOn)}
}

// GET /v1/payouts?provider=&status=&from=&to=
func (s *server) queryPayouts(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	f := views.PayoutFilter{Provider: q.Get("provider"), Status: q.OneOf("status", views.PayoutStatuses()...),
		From: q.Time("from"), To: q.Time("to"), Banked: bankedParam(q)}
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		q.Fail("to: must not be before from")
	}
	store, ok := s.settlementQuery(w, r, q)
	if !ok {
		return
	}
	head := payoutRecord(views.Payout{})
	out := newRowWriter(w, format, "payouts", head.names(), head.amounts()...)
	err := store.Payouts(r.Context(), f, func(p views.Payout) error {
		rec := payoutRecord(p)
		return out.row(rec, rec.cells())
	})
	s.finishRows(w, r, out, err, nil)
}

// GET /v1/payouts/{provider}/{payout_id}: the payout and its lines. CSV:
// one row per line (the payout's own figures are in the JSON answer and in
// GET /v1/payouts).
func (s *server) queryPayout(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	store, ok := s.settlementQuery(w, r, q)
	if !ok {
		return
	}
	vars := mux.Vars(r)
	prov, id := vars["provider"], vars["payout_id"]
	p, found, err := store.Payout(r.Context(), prov, id)
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	if !found {
		s.queryError(w, r, fmt.Errorf("%w: payout %s/%s", errNotFound, prov, id))
		return
	}
	lines := []record{}
	err = store.SettlementLines(r.Context(), prov, id, func(l views.SettlementLine) error {
		lines = append(lines, lineRecord(l))
		return nil
	})
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	if format == formatJSON {
		writeJSON(w, http.StatusOK, append(payoutRecord(p), field{name: "lines", json: lines}))
		return
	}
	head := lineRecord(views.SettlementLine{})
	out := newRowWriter(w, formatCSV, "", head.names(), head.amounts()...)
	for _, rec := range lines {
		if err = out.row(nil, rec.cells()); err != nil {
			break
		}
	}
	s.finishRows(w, r, out, err, nil)
}

// spoolUpload copies an upload's body (a settlement report, a bank
// statement) to a temporary file, bounded in size (MaxReportBytes) and in
// progress (no byte for UploadIdleTimeout: 408, nothing imported), and
// returns what reads it back, once validated, as often as the import needs.
// A report is far larger than a webhook and its import takes as long as
// its lines: the server's read and write timeouts (sized for webhooks) do
// not apply to this authenticated upload; the request's context still ends
// it if the client goes away. ok false: the answer is written.
func (s *server) spoolUpload(w http.ResponseWriter, r *http.Request, pattern string) (src ReportSource, cleanup func(), ok bool) {
	limit := s.cfg.MaxReportBytes
	if limit <= 0 {
		limit = DefaultMaxReportBytes
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		s.queryError(w, r, fmt.Errorf("spool upload: %w", err))
		return nil, nil, false
	}
	cleanup = func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	body := newProgressBody(w, r.Body, s.cfg.UploadIdleTimeout)
	if _, err := io.Copy(f, http.MaxBytesReader(w, body, limit)); err != nil {
		cleanup()
		if errors.Is(err, errUploadStalled) {
			w.Header().Set("Connection", "close")
		}
		s.queryError(w, r, err)
		return nil, nil, false
	}
	body.done()
	return func() (io.ReadCloser, error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return io.NopCloser(f), nil
	}, cleanup, true
}
