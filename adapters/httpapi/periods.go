package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// The accounting periods on /v1: the periods list, close and reopen
// (admin), a period's trial balance with its late adjustments, and the
// double-entry journal.

// PeriodStore reads the periods read models (readmodel.Store).
type PeriodStore interface {
	Periods(ctx context.Context) ([]views.PeriodInfo, error)
	TrialBalance(ctx context.Context, p period.Period) (views.TrialBalance, error)
	Journal(ctx context.Context, f views.JournalFilter) ([]views.JournalRow, error)
}

// PeriodActions closes and reopens periods as events (operations.Periods).
type PeriodActions interface {
	ClosePeriod(ctx context.Context, p period.Period, actor, note string) (period.Closed, error)
	ReopenPeriod(ctx context.Context, p period.Period, actor, reason string) (period.Reopened, error)
}

var _ PeriodActions = (*operations.Periods)(nil)

// journalPage is how many rows one read of the journal CSV fetches: the
// CSV streams the whole range page after page, never all of it in memory.
const journalPage = 1000

// maxActionBody caps the JSON body of an acting endpoint.
const maxActionBody = 64 << 10

func (s *server) registerPeriods(v1 *mux.Router) {
	v1.HandleFunc("/periods", s.queryPeriods).Methods(http.MethodGet)
	v1.Handle("/periods/{period}/close", acting(s.closePeriod)).Methods(http.MethodPost)
	v1.Handle("/periods/{period}/reopen", acting(s.reopenPeriod)).Methods(http.MethodPost)
	v1.HandleFunc("/periods/{period}/trial-balance", s.queryTrialBalance).Methods(http.MethodGet)
	v1.HandleFunc("/journal", s.queryJournal).Methods(http.MethodGet)
}

func (s *server) zone() *time.Location {
	if s.cfg.ReportingZone == nil {
		return time.UTC
	}
	return s.cfg.ReportingZone
}

// periodStore answers the first bad parameter of q, or 503 when no store
// is configured; else it returns the store.
func (s *server) periodStore(w http.ResponseWriter, r *http.Request, q *query) (PeriodStore, bool) {
	if q.Err() != nil {
		s.queryError(w, r, q.Err())
		return nil, false
	}
	if s.cfg.Periods == nil {
		s.queryError(w, r, errQueryNotConfigured)
		return nil, false
	}
	return s.cfg.Periods, true
}

// pathPeriod is the {period} of the path, YYYY-MM.
func pathPeriod(r *http.Request, q *query) period.Period {
	p, err := period.Parse(mux.Vars(r)["period"])
	if err != nil {
		q.SetErr(fmt.Errorf("period: %w", err))
	}
	return p
}

// csvAnswer starts a CSV answer written through csvexport (the amount
// columns stay numbers, every other cell is neutralized), offered as a
// download named filename.
func csvAnswer(w http.ResponseWriter, filename string, cols []csvexport.Column) *csvexport.Writer {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8; header=present")
	w.Header().Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	return csvexport.NewWriter(w, cols...)
}

// columns builds csvexport columns from names; those in amounts are
// numeric.
func columns(names []string, amounts ...string) []csvexport.Column {
	num := map[string]bool{}
	for _, a := range amounts {
		num[a] = true
	}
	out := make([]csvexport.Column, len(names))
	for i, n := range names {
		out[i] = csvexport.Column{Name: n, Numeric: num[n]}
	}
	return out
}

// GET /v1/periods
func (s *server) queryPeriods(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	store, ok := s.periodStore(w, r, q)
	if !ok {
		return
	}
	list, err := store.Periods(r.Context())
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	if format == formatJSON {
		out := make([]periodJSON, len(list))
		for i, p := range list {
			out[i] = newPeriodJSON(p)
		}
		writeJSON(w, http.StatusOK, map[string]any{"reporting_zone": s.zone().String(), "periods": out})
		return
	}
	cw := csvAnswer(w, "periods.csv", columns(periodColumns))
	for _, p := range list {
		if err = cw.Write(p.Period.String(), p.Status, strconv.FormatBool(p.BooksStart), p.Zone,
			formatTimePtr(p.ClosedAt), p.ClosedBy, p.CloseNote, formatTimePtr(p.ReopenedAt), p.ReopenedBy,
			p.ReopenReason, p.ContentHash, strconv.FormatInt(p.Entries, 10), strconv.FormatInt(p.Adjustments, 10)); err != nil {
			break
		}
	}
	s.finishCSV(r, cw, err)
}

var periodColumns = []string{"period", "status", "books_start", "zone", "closed_at", "closed_by", "close_note",
	"reopened_at", "reopened_by", "reopen_reason", "content_hash", "entries", "adjustments"}

type periodJSON struct {
	Period       period.Period `json:"period"`
	Status       string        `json:"status"`
	BooksStart   bool          `json:"books_start"`
	Zone         string        `json:"zone"`
	ClosedAt     *time.Time    `json:"closed_at"`
	ClosedBy     string        `json:"closed_by"`
	CloseNote    string        `json:"close_note"`
	ReopenedAt   *time.Time    `json:"reopened_at"`
	ReopenedBy   string        `json:"reopened_by"`
	ReopenReason string        `json:"reopen_reason"`
	ContentHash  string        `json:"content_hash"`
	Entries      int64         `json:"entries"`
	Adjustments  int64         `json:"adjustments"`
}

func newPeriodJSON(p views.PeriodInfo) periodJSON {
	return periodJSON{
		Period: p.Period, Status: p.Status, BooksStart: p.BooksStart, Zone: p.Zone,
		ClosedAt: utcPtr(p.ClosedAt), ClosedBy: p.ClosedBy, CloseNote: p.CloseNote,
		ReopenedAt: utcPtr(p.ReopenedAt), ReopenedBy: p.ReopenedBy, ReopenReason: p.ReopenReason,
		ContentHash: p.ContentHash, Entries: p.Entries, Adjustments: p.Adjustments,
	}
}

// POST /v1/periods/{period}/close (admin), body {"note":"…"} (optional).
// The answer is the recorded event: the close is durable. The ledger
// projection freezes the trial balance when it reads the event, so GET
// /v1/periods shows the period closed a moment later.
func (s *server) closePeriod(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Note string `json:"note"`
	}
	p, actor, ok := s.periodAction(w, r, &body)
	if !ok {
		return
	}
	ev, err := s.cfg.PeriodActions.ClosePeriod(r.Context(), p, actor, body.Note)
	if err != nil {
		s.actionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, periodActionJSON{Period: ev.Period, Status: views.PeriodClosed, Zone: ev.Zone,
		Actor: ev.Actor, Note: ev.Note, At: ev.At.UTC()})
}

// POST /v1/periods/{period}/reopen (admin), body {"reason":"…"} (required).
func (s *server) reopenPeriod(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reason string `json:"reason"`
	}
	p, actor, ok := s.periodAction(w, r, &body)
	if !ok {
		return
	}
	ev, err := s.cfg.PeriodActions.ReopenPeriod(r.Context(), p, actor, body.Reason)
	if err != nil {
		s.actionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, periodActionJSON{Period: ev.Period, Status: views.PeriodOpen,
		Actor: ev.Actor, Reason: ev.Reason, At: ev.At.UTC()})
}

type periodActionJSON struct {
	Period period.Period `json:"period"`
	Status string        `json:"status"`
	Zone   string        `json:"zone,omitempty"`
	Actor  string        `json:"actor"`
	Note   string        `json:"note,omitempty"`
	Reason string        `json:"reason,omitempty"`
	At     time.Time     `json:"at"`
}

// periodAction reads the period of the path, the actor and the optional
// JSON body of a close or reopen; it answers the problem itself.
func (s *server) periodAction(w http.ResponseWriter, r *http.Request, body any) (period.Period, string, bool) {
	q := newQuery(r)
	p := pathPeriod(r, q)
	if q.Err() == nil {
		q.SetErr(decodeActionBody(w, r, body))
	}
	if q.Err() != nil {
		s.queryError(w, r, q.Err())
		return period.Period{}, "", false
	}
	if s.cfg.PeriodActions == nil {
		s.queryError(w, r, errQueryNotConfigured)
		return period.Period{}, "", false
	}
	principal, _ := Principal(r.Context())
	return p, principal.Actor, true
}

// decodeActionBody reads an optional JSON object: an empty body is none,
// an unknown field or anything but one object is a 400 naming it.
func decodeActionBody(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxActionBody))
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: body: %v", errBadParameter, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: body: one JSON object expected", errBadParameter)
	}
	return nil
}

// actionError answers a refused or failed action; the domain's refusals
// (409: the period is not closable now) keep their message.
func (s *server) actionError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, operations.ErrContention) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	s.queryError(w, r, err)
}

// GET /v1/periods/{period}/trial-balance?format=json|csv&part=lines|adjustments
func (s *server) queryTrialBalance(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	part := q.OneOf("part", "lines", "adjustments")
	p := pathPeriod(r, q)
	store, ok := s.periodStore(w, r, q)
	if !ok {
		return
	}
	tb, err := store.TrialBalance(r.Context(), p)
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	if format == formatJSON {
		writeJSON(w, http.StatusOK, newTrialBalanceJSON(tb))
		return
	}
	if part == "adjustments" {
		cw := csvAnswer(w, "adjustments-"+p.String()+".csv", columns(views.AdjustmentColumns, "amount", "amount_minor"))
		for _, a := range tb.Adjustments {
			if err = cw.Write(a.Cells(tb.Info.Period)...); err != nil {
				break
			}
		}
		s.finishCSV(r, cw, err)
		return
	}
	cw := csvAnswer(w, "trial-balance-"+p.String()+".csv", columns(views.TrialBalanceColumns,
		"opening", "debits", "credits", "closing", "opening_minor", "debits_minor", "credits_minor", "closing_minor"))
	for _, cells := range tb.Cells() {
		if err = cw.Write(cells...); err != nil {
			break
		}
	}
	s.finishCSV(r, cw, err)
}

type trialBalanceJSON struct {
	periodJSON
	Frozen      bool             `json:"frozen"`
	Lines       []trialLineJSON  `json:"lines"`
	Adjustments []adjustmentJSON `json:"adjustments"`
}

type trialLineJSON struct {
	Account        string `json:"account"`
	Currency       string `json:"currency"`
	Opening        int64  `json:"opening"`
	Debits         int64  `json:"debits"`
	Credits        int64  `json:"credits"`
	Closing        int64  `json:"closing"`
	OpeningDecimal string `json:"opening_decimal"`
	DebitsDecimal  string `json:"debits_decimal"`
	CreditsDecimal string `json:"credits_decimal"`
	ClosingDecimal string `json:"closing_decimal"`
}

type adjustmentJSON struct {
	Adjusts       period.Period `json:"adjusts_period"`
	Account       string        `json:"account"`
	Currency      string        `json:"currency"`
	Amount        int64         `json:"amount"`
	AmountDecimal string        `json:"amount_decimal"`
	EffectiveAt   time.Time     `json:"effective_at"`
	BookedAt      time.Time     `json:"booked_at"`
	EventType     string        `json:"event_type"`
	Provider      string        `json:"provider"`
	StreamID      string        `json:"stream_id"`
	EventID       string        `json:"event_id"`
	PostingIndex  int           `json:"posting_index"`
}

func newTrialBalanceJSON(tb views.TrialBalance) trialBalanceJSON {
	out := trialBalanceJSON{periodJSON: newPeriodJSON(tb.Info), Frozen: tb.Frozen,
		Lines: make([]trialLineJSON, len(tb.Lines)), Adjustments: make([]adjustmentJSON, len(tb.Adjustments))}
	for i, l := range tb.Lines {
		out.Lines[i] = trialLineJSON{Account: l.Account, Currency: string(l.Currency),
			Opening: l.Opening, Debits: l.Debits, Credits: l.Credits, Closing: l.Closing,
			OpeningDecimal: money.FormatMinor(l.Opening, l.Currency), DebitsDecimal: money.FormatMinor(l.Debits, l.Currency),
			CreditsDecimal: money.FormatMinor(l.Credits, l.Currency), ClosingDecimal: money.FormatMinor(l.Closing, l.Currency)}
	}
	for i, a := range tb.Adjustments {
		out.Adjustments[i] = adjustmentJSON{Adjusts: a.Adjusts, Account: a.Account, Currency: string(a.Currency),
			Amount: a.Amount, AmountDecimal: money.FormatMinor(a.Amount, a.Currency),
			EffectiveAt: a.EffectiveAt.UTC(), BookedAt: a.BookedAt.UTC(), EventType: a.EventType,
			Provider: a.Provider, StreamID: a.StreamID, EventID: a.EventID.String(), PostingIndex: a.PostingIndex}
	}
	return out
}

// GET /v1/journal?from=&to=&time=effective|booked&period=&cursor=&limit=&format=
//
// JSON is paged by keyset (next_cursor, and the Next-Cursor header); CSV is
// the whole selection, streamed page after page as it is read, from the
// cursor when one is given.
func (s *server) queryJournal(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	f := views.JournalFilter{
		From: s.dayOrTime(q, "from"), To: s.dayOrTime(q, "to"),
		Booked: q.OneOf("time", "effective", "booked") == "booked",
		Zone:   s.zone(), After: q.cursor(),
	}
	if v := q.Get("period"); v != "" {
		p, err := period.Parse(v)
		if err != nil {
			q.Fail("period: %w", err)
		}
		f.Period = p
	}
	limit := q.limit()
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		q.Fail("to: must not be before from")
	}
	store, ok := s.periodStore(w, r, q)
	if !ok {
		return
	}
	if format == formatJSON {
		f.Limit = limit + 1
		page, err := store.Journal(r.Context(), f)
		if err != nil {
			s.queryError(w, r, err)
			return
		}
		next := ""
		if len(page) > limit {
			page = page[:limit]
			next = encodeCursor(page[len(page)-1].Key)
			w.Header().Set("Next-Cursor", next)
		}
		rows := make([]journalJSON, len(page))
		for i, j := range page {
			rows[i] = newJournalJSON(j)
		}
		writeJSON(w, http.StatusOK, map[string]any{"journal": rows, "next_cursor": next})
		return
	}
	// The first page is read before anything is written, so that a failure
	// there is still an error answer with its status.
	f.Limit = journalPage
	page, err := store.Journal(r.Context(), f)
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	cw := csvAnswer(w, "journal.csv", columns(views.JournalColumns, "debit", "credit", "debit_minor", "credit_minor"))
	for {
		for _, j := range page {
			if err = cw.Write(j.Cells()...); err != nil {
				break
			}
		}
		if err != nil || len(page) < f.Limit {
			break
		}
		k := page[len(page)-1].Key
		f.After = &k
		if page, err = store.Journal(r.Context(), f); err != nil {
			break
		}
	}
	s.finishCSV(r, cw, err)
}

type journalJSON struct {
	ID             int64         `json:"id"`
	Date           string        `json:"date"`
	Account        string        `json:"account"`
	Debit          string        `json:"debit"`
	Credit         string        `json:"credit"`
	DebitMinor     int64         `json:"debit_minor"`
	CreditMinor    int64         `json:"credit_minor"`
	Currency       string        `json:"currency"`
	Memo           string        `json:"memo"`
	Provider       string        `json:"provider"`
	PaymentID      string        `json:"payment_id"`
	EventID        string        `json:"event_id"`
	EffectiveAt    time.Time     `json:"effective_at"`
	BookedAt       time.Time     `json:"booked_at"`
	Period         period.Period `json:"period"`
	LateAdjustment bool          `json:"late_adjustment"`
	Adjusts        period.Period `json:"adjusts_period"`
	Actor          string        `json:"actor,omitempty"`
}

func newJournalJSON(j views.JournalRow) journalJSON {
	return journalJSON{ID: j.ID, Date: j.Date, Account: j.Account, Debit: j.DebitDecimal, Credit: j.CreditDecimal,
		DebitMinor: j.Debit, CreditMinor: j.Credit, Currency: string(j.Currency), Memo: j.Memo,
		Provider: j.Provider, PaymentID: j.PaymentID, EventID: j.EventID.String(),
		EffectiveAt: j.EffectiveAt.UTC(), BookedAt: j.BookedAt.UTC(), Period: j.Period,
		LateAdjustment: j.LateAdjustment, Adjusts: j.Adjusts, Actor: j.Actor}
}

// dayOrTime is an RFC 3339 timestamp, or a date YYYY-MM-DD meaning its
// midnight in the reporting time zone (what an accountant types).
func (s *server) dayOrTime(q *query, name string) time.Time { return q.DayOrTime(name, s.zone()) }

// finishCSV ends a CSV answer. An error before the first byte is an
// ordinary error answer; after it, the connection is aborted, so that the
// client sees a failed download rather than a file silently missing rows.
func (s *server) finishCSV(r *http.Request, cw *csvexport.Writer, err error) {
	if err == nil {
		err = cw.Flush()
	}
	if err == nil {
		return
	}
	s.log.Warn("CSV answer aborted", "path", r.URL.Path, "error", err, "request_id", requestID(r.Context()))
	panic(http.ErrAbortHandler)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func formatTimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return formatTime(*t)
}
