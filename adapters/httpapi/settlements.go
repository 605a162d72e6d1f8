package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
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
	v1.HandleFunc("/payouts/{provider}/{payout_id}", s.queryPayout).Methods(http.MethodGet)
}

// POST /v1/settlements/{provider}: the body is one report file. It is
// spooled to a temporary file (bounded memory whatever its size), validated
// whole, then imported line by line through the inbox gate.
func (s *server) importSettlement(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Settlements == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	limit := s.cfg.MaxReportBytes
	if limit <= 0 {
		limit = DefaultMaxReportBytes
	}
	// A report is far larger than a webhook and its import takes as long
	// as its lines: the server's read and write timeouts (sized for
	// webhooks) do not apply to this authenticated upload; the request's
	// context still ends it if the client goes away.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	f, err := os.CreateTemp("", "onceledger-report-*")
	if err != nil {
		s.queryError(w, r, fmt.Errorf("spool report: %w", err))
		return
	}
	defer func() {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}()
	if _, err := io.Copy(f, http.MaxBytesReader(w, r.Body, limit)); err != nil {
		s.queryError(w, r, err)
		return
	}
	src := func() (io.ReadCloser, error) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		return io.NopCloser(f), nil
	}
	sum, err := s.cfg.Settlements.ImportReport(r.Context(), mux.Vars(r)["provider"], src)
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

var payoutColumns = []string{"provider", "payout_id", "status", "amount", "amount_decimal", "currency", "arrival_date",
	"line_count", "lines_net", "difference", "difference_decimal", "updated_at"}

type payoutJSON struct {
	Provider          string     `json:"provider"`
	PayoutID          string     `json:"payout_id"`
	Status            string     `json:"status"`
	Amount            int64      `json:"amount"`
	AmountDecimal     string     `json:"amount_decimal"`
	Currency          *string    `json:"currency"`
	ArrivalDate       *time.Time `json:"arrival_date"`
	LineCount         int64      `json:"line_count"`
	LinesNet          int64      `json:"lines_net"`
	Difference        int64      `json:"difference"`
	DifferenceDecimal string     `json:"difference_decimal"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

func payoutOut(p views.Payout) (payoutJSON, []string) {
	c := money.Currency(p.Currency)
	dec := func(v int64) string {
		if c == "" {
			return ""
		}
		return money.FormatMinor(v, c)
	}
	j := payoutJSON{Provider: p.Provider, PayoutID: p.PayoutID, Status: p.Status, Amount: p.Amount,
		AmountDecimal: dec(p.Amount), ArrivalDate: timePtr(p.ArrivalDate), LineCount: p.LineCount, LinesNet: p.LinesNet,
		Difference: p.Difference, DifferenceDecimal: dec(p.Difference), UpdatedAt: p.UpdatedAt.UTC()}
	if p.Currency != "" {
		j.Currency = &p.Currency
	}
	return j, []string{p.Provider, p.PayoutID, p.Status, strconv.FormatInt(p.Amount, 10), dec(p.Amount), p.Currency,
		formatTime(p.ArrivalDate), strconv.FormatInt(p.LineCount, 10), strconv.FormatInt(p.LinesNet, 10),
		strconv.FormatInt(p.Difference, 10), dec(p.Difference), formatTime(p.UpdatedAt)}
}

// GET /v1/payouts?provider=&status=&from=&to=
func (s *server) queryPayouts(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	f := views.PayoutFilter{Provider: q.Get("provider"), Status: q.OneOf("status", views.PayoutStatuses()...),
		From: q.Time("from"), To: q.Time("to")}
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		q.Fail("to: must not be before from")
	}
	store, ok := s.settlementQuery(w, r, q)
	if !ok {
		return
	}
	out := newRowWriter(w, format, "payouts", payoutColumns)
	err := store.Payouts(r.Context(), f, func(p views.Payout) error {
		j, rec := payoutOut(p)
		return out.row(j, rec)
	})
	s.finishRows(w, r, out, err, nil)
}

type settlementLineJSON struct {
	LineKey          string     `json:"line_key"`
	Kind             string     `json:"kind"`
	SourceType       string     `json:"source_type"`
	LineID           string     `json:"line_id"`
	PaymentID        string     `json:"payment_id"`
	CaptureID        string     `json:"capture_id"`
	RefundID         string     `json:"refund_id"`
	DisputeID        string     `json:"dispute_id"`
	Gross            int64      `json:"gross"`
	Fee              int64      `json:"fee"`
	Net              int64      `json:"net"`
	Currency         string     `json:"currency"`
	OriginalAmount   int64      `json:"original_amount"`
	OriginalCurrency string     `json:"original_currency"`
	ExchangeRate     string     `json:"exchange_rate"`
	OccurredAt       time.Time  `json:"occurred_at"`
	AvailableOn      *time.Time `json:"available_on"`
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
	var lines []settlementLineJSON
	var recs [][]string
	err = store.SettlementLines(r.Context(), prov, id, func(l views.SettlementLine) error {
		lines = append(lines, settlementLineJSON{LineKey: l.LineKey, Kind: l.Kind, SourceType: l.SourceType, LineID: l.LineID,
			PaymentID: l.PaymentID, CaptureID: l.CaptureID, RefundID: l.RefundID, DisputeID: l.DisputeID,
			Gross: l.Gross, Fee: l.Fee, Net: l.Net, Currency: l.Currency, OriginalAmount: l.OriginalAmount,
			OriginalCurrency: l.OriginalCurrency, ExchangeRate: l.ExchangeRate, OccurredAt: l.OccurredAt.UTC(),
			AvailableOn: timePtr(l.AvailableOn)})
		recs = append(recs, []string{l.LineKey, l.Kind, l.SourceType, l.LineID, l.PaymentID, l.CaptureID, l.RefundID,
			l.DisputeID, strconv.FormatInt(l.Gross, 10), strconv.FormatInt(l.Fee, 10), strconv.FormatInt(l.Net, 10),
			l.Currency, strconv.FormatInt(l.OriginalAmount, 10), l.OriginalCurrency, l.ExchangeRate,
			formatTime(l.OccurredAt), formatTime(l.AvailableOn)})
		return nil
	})
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	if format == formatJSON {
		j, _ := payoutOut(p)
		if lines == nil {
			lines = []settlementLineJSON{}
		}
		writeJSON(w, http.StatusOK, struct {
			payoutJSON
			Lines []settlementLineJSON `json:"lines"`
		}{j, lines})
		return
	}
	out := newRowWriter(w, formatCSV, "", []string{"line_key", "kind", "source_type", "line_id", "payment_id",
		"capture_id", "refund_id", "dispute_id", "gross", "fee", "net", "currency", "original_amount",
		"original_currency", "exchange_rate", "occurred_at", "available_on"})
	for _, rec := range recs {
		if err = out.row(nil, rec); err != nil {
			break
		}
	}
	s.finishRows(w, r, out, err, nil)
}
